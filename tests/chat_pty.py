#!/usr/bin/env python3
"""`mote chat` under a pseudo-terminal, as a user types: Ctrl-C during a reply stops it and
returns to the prompt with the conversation kept; /clear empties the KV cache; Ctrl-D ends.

usage: chat_pty.py MOTE MODEL   (exit 0 on success; the first failed check on stderr, exit 1)
Only the standard library (pty), so it runs where CI installs no Python packages.
"""
import os
import pty
import re
import select
import sys
import time

TIMEOUT = 60.0


def main():
    mote, model = sys.argv[1], sys.argv[2]
    # --verbose: "context N/M tokens" after each reply tells what the cache holds.
    argv = [mote, "chat", "-m", model, "--verbose", "--temp", "0", "-n", "400", "--ignore-eos"]
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(mote, argv)
    seen = b""

    def wait_for(pattern, after=0):
        """Reads until pattern (a regex over bytes) appears past offset after; returns the match."""
        nonlocal seen
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = re.compile(pattern).search(seen, after)
            if m:
                return m
            if time.monotonic() > deadline:
                fail(f"timed out waiting for {pattern!r}; the terminal showed:\n{seen.decode(errors='replace')}")
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    fail(f"the chat ended early; it showed:\n{seen.decode(errors='replace')}")

    def fail(message):
        print(message, file=sys.stderr)
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        sys.exit(1)

    def context_after(offset):
        m = wait_for(rb"context (\d+)/\d+ tokens", offset)
        return int(m.group(1)), m.end()

    at = wait_for(rb"> ").end()
    os.write(fd, b"Tell me a long story about a dragon.\n")
    # Ctrl-C once the reply is streaming (a few bytes after the echoed message).
    at = wait_for(rb"dragon\.\r?\n.{8}", at).end()
    os.write(fd, b"\x03")
    at = wait_for(rb"reply stopped", at).end()
    first, at = context_after(at)
    at = wait_for(rb"> ", at).end()
    os.write(fd, b"What was my first message about?\n")
    # A reply that runs to -n unless stopped: stop it too, then compare what the cache holds.
    at = wait_for(rb"about\?\r?\n.{8}", at).end()
    os.write(fd, b"\x03")
    second, at = context_after(at)
    if second <= first:
        fail(f"the second turn's context ({second}) does not hold the first ({first})")
    at = wait_for(rb"> ", at).end()
    os.write(fd, b"/clear\n")
    at = wait_for(rb"conversation cleared", at).end()
    at = wait_for(rb"> ", at).end()
    os.write(fd, b"Hi.\n")
    at = wait_for(rb"Hi\.\r?\n.{4}", at).end()
    os.write(fd, b"\x03")
    third, at = context_after(at)
    if third >= first:
        fail(f"after /clear the context ({third}) still holds the first turn ({first})")
    at = wait_for(rb"> ", at).end()
    os.write(fd, b"\x04")  # Ctrl-D at the prompt ends the chat
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail(f"mote chat ended with status {status}; it showed:\n{seen.decode(errors='replace')}")
    print(f"ok: contexts {first}, {second}, after /clear {third}")


if __name__ == "__main__":
    main()
