"""Prompt evaluation and generation speed with weight repacking on and off, each in its own process.

    python plugins/kb-llamacpp/bench/bench_repacking.py [--model PATH] [--prompt-tokens 500] [--rounds 3]

Each setting (``weight_repacking`` = off, on) loads the model in a child process, evaluates a
prompt of about ``--prompt-tokens`` tokens ``--rounds`` times (prefill tokens/s, the median) and
generates ``--new-tokens`` tokens greedily (generation tokens/s, the median); a child killed by a
signal is reported as such (repacking on crashes where llama.cpp's AMX kernels are used). Ratios
are against the first setting that ran. To compare llama.cpp builds, run it once per build (put a
build first on ``PYTHONPATH``); the header names the build's CPU features.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

TEXT = (
    "Backups run nightly at 02:30 UTC on the storage cluster. Each backup is encrypted with the team key, "
    "copied to a second region, and kept for 35 days before deletion. "
)


def child(model: str, setting: str, prompt_tokens: int, new_tokens: int, rounds: int) -> dict[str, float]:
    """Load the model with ``setting`` and measure; runs in the child process."""
    import llama_cpp

    from kb_llamacpp.loading import model_parameters, use_extra_buffers, weight_repacking

    with model_parameters(use_extra_buffers(weight_repacking(setting))):
        llm = llama_cpp.Llama(model_path=model, n_ctx=4096, n_batch=512, n_threads=2, n_threads_batch=2, verbose=False)
    tokens = llm.tokenize(TEXT.encode())
    prompt = (tokens * (prompt_tokens // len(tokens) + 1))[:prompt_tokens]
    prefill, generate = [], []
    for _ in range(rounds):
        llm.reset()
        began = time.perf_counter()
        llm.eval(prompt)
        prefill.append(len(prompt) / (time.perf_counter() - began))
        began = time.perf_counter()
        for _ in range(new_tokens):  # greedy, one token per decode, on top of the evaluated prompt
            llm.eval([llm.sample(temp=0.0)])
        generate.append(new_tokens / (time.perf_counter() - began))
    llm.close()
    return {"prefill_tps": statistics.median(prefill), "generate_tps": statistics.median(generate)}


def main() -> None:
    """Print one row per setting, with ratios against the first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--prompt-tokens", type=int, default=500)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settings", default="off,on")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(str(args.model), args.child, args.prompt_tokens, args.new_tokens, args.rounds)))
        return
    import llama_cpp

    from kb_llamacpp import default_model_path

    model = args.model or default_model_path()
    features = llama_cpp.llama_print_system_info().decode().replace(" = 1", "").replace(" |", "")
    print(f"llama-cpp-python {llama_cpp.__version__} at {Path(llama_cpp.__file__).parent}\nbuild: {features.strip()}")
    print(f"{'weight_repacking':17} {'prefill tok/s':>13} {'generate tok/s':>14} {'prefill x':>9} {'generate x':>10}")
    base: dict[str, float] | None = None
    for setting in args.settings.split(","):
        command = [sys.executable, __file__, "--child", setting, "--model", str(model)]
        command += ["--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens)]
        command += ["--rounds", str(args.rounds)]
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        if run.returncode < 0:
            print(f"{setting:17} crashed ({signal.Signals(-run.returncode).name})")
            continue
        if run.returncode != 0:
            print(f"{setting:17} failed: {run.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(run.stdout.strip().splitlines()[-1])
        base = base or row
        print(
            f"{setting:17} {row['prefill_tps']:13.1f} {row['generate_tps']:14.1f}"
            f" {row['prefill_tps'] / base['prefill_tps']:9.2f} {row['generate_tps'] / base['generate_tps']:10.2f}"
        )


if __name__ == "__main__":
    main()
