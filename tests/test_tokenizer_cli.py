#!/usr/bin/env python3
"""CLI contract of `vkllm tokenize` / `vkllm detokenize` (scripts depend on it).

For every vocabulary in ../shared/models that has llama.cpp test vectors (X.gguf.inp/.out), each
case is written to a file and run through `vkllm tokenize -m X.gguf --ids --no-bos -f FILE`; the
ids must equal the .out line. SentencePiece and byte-level BPE cases must also come back from
`vkllm detokenize`. The llama2.c Llama 2 prompts are checked with BOS (no --no-bos), and the
default "id<TAB>piece" output is checked on one case. Exit 77 (skipped) when the models are
missing, unless VKLLM_REQUIRE_TEST_MODELS=1. With --every N only every Nth vector of each vocabulary
goes through the CLI (`make test`; the library runs all of them in test_tokenizer, and the full tier
runs all of them here).
usage: test_tokenizer_cli.py VKLLM_BIN [--every N]
"""
import json
import os
import subprocess
import sys
import tempfile

SEP = b"\n__ggml_vocab_test__\n"
VOCABS = ["llama-spm", "phi-3", "bert-bge", "gpt-2", "mpt", "starcoder", "refact"]


def models_dir():
    d = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT")
    return d or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models")


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, **kw)
    if r.returncode != 0:
        sys.exit("FAIL: %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr.decode(errors="replace")))
    return r.stdout


def main():
    vkllm = sys.argv[1] if len(sys.argv) > 1 else os.environ["VKLLM_BIN"]
    every = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--every" else 1
    mdir = models_dir()
    if not os.path.exists(os.path.join(mdir, "ggml-vocab-llama-spm.gguf")):
        if os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1":
            sys.exit("FAIL: test models missing in %s" % mdir)
        print("SKIPPED: test models missing in %s" % mdir)
        sys.exit(77)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for v in VOCABS:
            model = os.path.join(mdir, "ggml-vocab-%s.gguf" % v)
            inp = open(model + ".inp", "rb").read().split(SEP)[:-1]
            out = open(model + ".out").read().split("\n")[:-1]
            assert len(inp) == len(out) == 46, v
            passed = ran = 0
            for i, (text, want) in enumerate(zip(inp, out)):
                if i % every:
                    continue
                ran += 1
                path = os.path.join(tmp, "case.txt")
                with open(path, "wb") as f:
                    f.write(text)
                got = run([vkllm, "tokenize", "-m", model, "--ids", "--no-bos", "-f", path]).decode()
                if not got.endswith("\n") or got.count("\n") != 1:
                    print("FAIL: %s case %d: --ids must print one line" % (v, i))
                    failures += 1
                    continue
                if got.split() != want.split():
                    print("FAIL: %s case %d %r:\n  got  %s\n  want %s" % (v, i, text[:40], got.split(), want.split()))
                    failures += 1
                    continue
                if v != "bert-bge" and want.split():
                    back = run([vkllm, "detokenize", "-m", model] + want.split())
                    if back != text:
                        print("FAIL: %s case %d: detokenize gave %r, want %r" % (v, i, back[:60], text[:60]))
                        failures += 1
                        continue
                passed += 1
            print("%-10s %d/%d%s" % (v, passed, ran, " (one in %d of %d)" % (every, len(inp)) if every > 1 else ""))

        # llama2.c: Llama 2 prompts, BOS added because the model asks for it
        model = os.path.join(mdir, "ggml-vocab-llama-spm.gguf")
        vec = json.load(open(os.path.join(mdir, "llama2c-test-vectors.json")))
        for case in vec["llama2_tokenizer_encode"]["cases"]:
            args = [vkllm, "tokenize", "-m", model, "--ids"]
            got = run(args + (["--", case["text"]] if case["text"] else ["-f", os.devnull])).decode().split()
            if [int(x) for x in got] != case["ids"]:
                print("FAIL: llama2.c %r: got %s want %s" % (case["text"][:40], got, case["ids"]))
                failures += 1
        # default output: id<TAB>piece, one line per token
        got = run([vkllm, "tokenize", "-m", model, "--no-bos", "Hello world\n"]).decode()
        if got != "15043\t Hello\n3186\t world\n13\t\\n\n":
            print("FAIL: default output %r" % got)
            failures += 1
        # errors: a missing model and a bad id are one line on stderr and a non-zero exit
        r = subprocess.run([vkllm, "tokenize", "-m", os.path.join(tmp, "nope.gguf"), "x"], capture_output=True)
        if r.returncode == 0 or not r.stderr.startswith(b"vkllm:"):
            print("FAIL: missing model: rc %d %r" % (r.returncode, r.stderr))
            failures += 1
        r = subprocess.run([vkllm, "detokenize", "-m", model, "99999999"], capture_output=True)
        if r.returncode == 0 or b"out of the vocabulary" not in r.stderr:
            print("FAIL: bad id: rc %d %r" % (r.returncode, r.stderr))
            failures += 1
    if failures:
        sys.exit("FAIL: %d failures" % failures)
    print("OK")


if __name__ == "__main__":
    main()
