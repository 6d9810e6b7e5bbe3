#!/usr/bin/env python3
"""How often a chat reply loops, per --repeat-penalty: the measurement behind chat's default.

usage: bench/repeat_penalty.py MOTE MODEL [PENALTY ...]   (default penalties 1.0 1.1 1.2 1.3)

Runs `mote run --chat` (chat's sampling defaults, fixed seeds) on a few prompts and counts the
replies that loop: a sentence or line of 12+ characters said twice, or the same 8-word sequence
three times. Prints one line per penalty. Stdlib only.
"""
import re
import subprocess
import sys

PROMPTS = [
    "Tell me a story about a dragon.",
    "What is the capital of France?",
    "Write a poem about the sea.",
    "Explain how a computer works.",
    "Give me three tips for writing clear code.",
    "Describe your favourite food.",
    "Why is the sky blue?",
    "List some animals that live in the forest.",
]
SEEDS = [1, 2]


def loops(text):
    parts = [p.strip().lower() for p in re.split(r"[.!?\n]+", text) if len(p.strip()) >= 12]
    if len(parts) != len(set(parts)):
        return True
    words = text.lower().split()
    grams = {}
    for i in range(len(words) - 7):
        key = tuple(words[i:i + 8])
        grams[key] = grams.get(key, 0) + 1
        if grams[key] >= 3:
            return True
    return False


def main():
    mote, model = sys.argv[1], sys.argv[2]
    penalties = sys.argv[3:] or ["1.0", "1.1", "1.2", "1.3"]
    for penalty in penalties:
        looped = total = 0
        for prompt in PROMPTS:
            for seed in SEEDS:
                out = subprocess.run([mote, "run", "--chat", "-m", model, "-p", prompt, "-n", "200", "-s", str(seed),
                                      "--repeat-penalty", penalty], capture_output=True, text=True, check=True).stdout
                looped += loops(out)
                total += 1
        print(f"--repeat-penalty {penalty}: {looped}/{total} replies loop", flush=True)


if __name__ == "__main__":
    main()
