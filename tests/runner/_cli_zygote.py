"""Run realitycheck commands in forked children of one warm process (for kill -9 tests).

Started as ``python _cli_zygote.py``, it imports the command line and what its
stages use once, then reads one JSON line per command (``{"argv": [...],
"log": PATH}``) from stdin. For each it forks a child that runs
``realitycheck.cli.main(argv)`` with stdout and stderr in ``log``, prints
``{"pid": PID}``, waits for the child and prints ``{"code": EXIT_CODE}``, or
``{"signal": N}`` when the child was killed. A forked child is a whole CLI
process of its own (its own memory, files and sockets): killing it with
SIGKILL is what a user's kill -9 does, without paying the imports again.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    import openai  # noqa: F401  (warm: the children inherit the imports)
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import realitycheck.backends.openai  # noqa: F401
    import realitycheck.detectors.semantic_entropy  # noqa: F401
    import realitycheck.labelers.qa_judge  # noqa: F401
    from realitycheck.cli import main as cli_main

    for line in sys.stdin:
        command = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: one CLI run
            fd = os.open(command["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            code = 1
            try:
                code = cli_main(command["argv"])
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            print(json.dumps({"signal": os.WTERMSIG(status)}), flush=True)
        else:
            print(json.dumps({"code": os.WEXITSTATUS(status)}), flush=True)


if __name__ == "__main__":
    main()
