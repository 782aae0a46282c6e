"""`pinnace record` ends on Ctrl-C whenever it comes, even while changes pour in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

INTERRUPTED_RECORDINGS = textwrap.dedent(
    """
    import io, json, os, random, signal, sys, threading, time

    from kubernetes.client.exceptions import ApiException

    from pinnace.cli.recorder import Recorder

    EVENT = json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "a"}}}) + "\\n"


    class Watch:
        def stream(self, amt=None, decode_content=False):
            while True:  # a watch that never runs dry: the main thread is always writing
                yield (EVENT * 20).encode()

        def release_conn(self):
            pass


    class Listed:
        data = json.dumps({"metadata": {"resourceVersion": "1"}, "items": [{"metadata": {}}]})


    class Api:
        class configuration:
            host = "http://cluster"

        def call_api(self, path, method, query_params=(), **options):
            if not path.endswith("/pods"):
                raise ApiException(status=404)  # only Pods served: one watch thread
            return Watch() if ("watch", "true") in query_params else Listed()


    def outside(signum, frame):
        raise AssertionError("signalled outside the recording")


    def interrupt():
        while signal.getsignal(signal.SIGINT) is outside:  # until the recording has begun
            time.sleep(0.001)
        time.sleep(random.uniform(0.005, 0.03))
        os.kill(os.getpid(), signal.SIGINT)


    def stalled():
        print("stalled", flush=True)
        os._exit(3)


    signal.signal(signal.SIGINT, outside)
    for trial in range(int(sys.argv[1])):
        watchdog = threading.Timer(60, stalled)
        watchdog.start()
        threading.Thread(target=interrupt, daemon=True).start()
        Recorder(Api(), io.StringIO()).record(None)
        watchdog.cancel()
    """
)


def test_ctrl_c_ends_a_recording_wherever_it_interrupts() -> None:
    # Recordings of a cluster whose one watch never runs dry, each interrupted at a random
    # moment. A KeyboardInterrupt could come between the changes queue's lock being taken and
    # the `with` block that releases it, and the recording then waited for the lock forever
    # (within ten interrupts here); and a drain that went on while changes came faster than
    # they were written never let the recording see its end.
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_RECORDINGS, "30"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
