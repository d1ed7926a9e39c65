"""Commands for searching: `kb search` and `kb eval retrieval`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb_core.cli.base import Session, emit, json_option, pass_session, terminal_progress
from kb_core.cli.checks import K_RANGE, check_glob
from kb_core.cli.options import input_file, mode_option, out_option
from kb_core.errors import EXIT_NO_RESULT
from kb_core.terminal import shortened, shown
from kb_core.types import SEARCH_MODES, SearchQuery

if TYPE_CHECKING:
    from kb_core.retrieval.search import SearchResponse


def _print_hits(response: SearchResponse, explain: bool) -> None:
    """Rank, score, citation, heading path and snippet of every hit (and why, with ``explain``)."""
    if not response.hits:
        click.echo(f"no results for '{shortened(response.query)}' ({response.mode})", err=True)
    for hit, why in zip(response.hits, response.explanations):
        click.echo(f"{hit.rank:>2}. {hit.score:.3f}  {click.style(shown(hit.citation), bold=True)}")
        if hit.heading_path:
            click.echo(f"    {shown(' > '.join(hit.heading_path))}")
        snippet = " ".join(hit.snippet.split())
        if snippet:
            click.echo(textwrap.indent(textwrap.shorten(snippet, width=240, placeholder=" ..."), "    "))
        if explain:
            parts = ", ".join(
                f"{c.retriever} #{c.rank} score {c.score:.3f} raw {c.raw_score:.3f}" for c in why.contributions
            )
            fused = f"rrf {why.rrf:.4f} (norm {why.rrf_norm:.3f}) x evidence {why.evidence:.3f}" if why.rrf else ""
            if (
                fused
                and why.gate_from is not None
                and why.gate_to is not None
                and abs(why.gate_from - why.gate_to) > 1e-9
            ):
                fused += f", gate {why.gate_from:.3f} -> {why.gate_to:.2f}"
            fused += "; " if fused else ""
            click.echo(click.style(f"    [{fused}{parts}]", dim=True))
    if explain:
        for run in response.retrievers:
            tops = ", ".join(f"{s:.3f}" for s in run.top_scores)
            click.echo(
                click.style(
                    f"  {run.name} ({run.mode}): {run.hits} hits in {run.took_ms:.1f} ms; top scores {tops};"
                    f" weight {run.weight:.2f}",
                    dim=True,
                )
            )
    click.echo(
        click.style(f"  {len(response.hits)} hits, {response.mode}, {response.took_ms:.1f} ms", dim=True), err=True
    )


@click.command("search")
@click.argument("query")
@mode_option("Search mode (default: [search] mode, normally hybrid).")
@click.option("--k", "k", type=K_RANGE, help="How many hits (default: [search] default_k).")
@click.option(
    "--path",
    "path_glob",
    callback=check_glob,
    help="Only documents whose path matches this glob (e.g. 'notes/*.md'; * also matches /).",
)
@click.option("--explain", is_flag=True, help="Show each retriever's ranks and scores behind every hit.")
@json_option
@pass_session
def search_command(
    session: Session, query: str, mode: str | None, k: int | None, path_glob: str | None, explain: bool, as_json: bool
) -> int:
    """Search the knowledge base; print rank, score, citation, heading path and snippet.

    Scores are in [0, 1] in every mode (see the README, "Search scores"). Exit code 1 when
    nothing matches.
    """
    from kb_core.retrieval.search import search

    cfg = session.config.search
    request = SearchQuery(text=query, k=k or cfg.default_k, mode=mode or cfg.mode, path_glob=path_glob)
    response = search(session.kb(create=False), request)
    emit(as_json, "search_response.v1", response, lambda: _print_hits(response, explain))
    return 0 if response.hits else EXIT_NO_RESULT


@click.command("retrieval")
@input_file("--queries", "queries_file", 'BEIR queries.jsonl ({"id", "text"} per line).')
@input_file("--qrels", "qrels_file", "BEIR qrels.tsv (query-id, doc-id, score).")
@mode_option("Mode to evaluate; repeat for several (default: all three).", multiple=True)
@click.option("--k", "k", type=K_RANGE, default=10, show_default=True, help="Cut-off for the metrics.")
@out_option("Write run.<mode>.trec and report.json here.")
@json_option
@pass_session
def eval_retrieval_command(
    session: Session,
    queries_file: Path,
    qrels_file: Path,
    modes: tuple[str, ...],
    k: int,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Measure nDCG@k, Recall@k and MRR@k on a BEIR-format query set (document id = file stem)."""
    from kb_core.evaluation.retrieval import evaluate_retrieval

    with terminal_progress(enabled=not as_json) as progress:
        report = evaluate_retrieval(
            session.kb(create=False), queries_file, qrels_file, modes or SEARCH_MODES, k, out_dir, progress
        )

    def human() -> None:
        click.echo(f"{report.num_queries} queries, k={report.k}, run {report.run_id}")
        click.echo(
            f"{'mode':<8} {'nDCG@' + str(k):>9} {'Recall@' + str(k):>10} {'MRR@' + str(k):>8}"
            f" {'p50 ms':>8} {'p95 ms':>8}"
        )
        for m in report.modes:
            click.echo(
                f"{m.mode:<8} {m.ndcg_at_k:>9.4f} {m.recall_at_k:>10.4f} {m.mrr_at_k:>8.4f}"
                f" {m.latency_ms_p50:>8.1f} {m.latency_ms_p95:>8.1f}"
            )
        if out_dir is not None:
            click.echo(f"report: {out_dir / 'report.json'}")

    emit(as_json, "retrieval_report.v1", report, human)


COMMANDS = (search_command,)
EVAL_COMMANDS = (eval_retrieval_command,)
