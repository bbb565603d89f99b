"""Start `transformers serve` processes as forked children of one warm process.

``python _serve_zygote.py FOLDER`` imports torch, transformers and the server's
modules once (most of a cold start: about 10 s on a loaded core), builds the
tiny Llama into ``FOLDER`` in a child (see _tiny_llama.py), prints
``{"ready": true, "log_requests": BOOL}`` (whether ``serve`` has
``--enable-log-requests``, which transformers 5.25 added: before it, every
request was logged anyway) and then reads one JSON line per server to start:
``{"argv": [...], "log": PATH}``. For each it forks a child that runs the
``transformers`` command line (``transformers.cli.transformers.main``, the
console script's function) with ``argv`` (e.g. ``["serve", FOLDER, "--port",
"8000"]``) in a session of its own, with stdout and stderr in ``log``, and
prints ``{"pid": PID}``. The child is a whole server process: it loads the
model with ``from_pretrained`` and serves until it is stopped (SIGTERM) or
killed (SIGKILL), so killing one and starting the next costs a model load,
not the imports. Closing stdin (the test run ends, or dies) ends the zygote
at once, and the kernel then kills any server it started that still runs.

The zygote itself runs no torch operation and no tokenizer, so its threads
(none) are safe to fork.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import sys
from pathlib import Path


def _die_with_parent() -> None:
    """Have Linux kill this process when its parent ends (no server outlives a dead test run)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))


def _fork(target, log: str | None = None) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the child never returns into the zygote's loop
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _die_with_parent()
        if log is not None:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
        target()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    folder = Path(sys.argv[1])
    import fastapi  # noqa: F401  (warm: the children inherit the imports)
    import torch  # noqa: F401
    import uvicorn  # noqa: F401
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: F401
    from transformers.cli.serve import Serve
    from transformers.cli.serving import chat_completion, completion, model_manager  # noqa: F401
    from transformers.cli.transformers import main as transformers_main

    sys.path.insert(0, str(Path(__file__).parent))
    from _tiny_llama import build

    builder = _fork(lambda: build(folder))
    _, status = os.waitpid(builder, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        print(json.dumps({"ready": False, "status": status}), flush=True)
        return
    log_requests = "enable_log_requests" in inspect.signature(Serve).parameters
    print(json.dumps({"ready": True, "log_requests": log_requests}), flush=True)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # servers are reaped when they end

    def serve(argv: list[str]) -> None:
        sys.argv = ["transformers", *argv]
        transformers_main()

    for line in sys.stdin:
        command = json.loads(line)
        pid = _fork(lambda argv=command["argv"]: serve(argv), command["log"])
        print(json.dumps({"pid": pid}), flush=True)
    os._exit(0)  # nothing to clean up; the interpreter's own shutdown takes seconds


if __name__ == "__main__":
    main()
