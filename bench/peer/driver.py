"""BENCHMARK PEER DRIVER, NEVER SHIPPED: runs <module>.lambda_handler in process (argv[2],
default `handler`: document output; `handler_ingestion`: ingestion) on the SQS events in
argv[1] (a JSON list; the first one warms up), then prints one JSON line: time per
message and the process's peak RSS. With BENCH_PAUSE_AFTER_WARM set it prints `warm` to
stderr after the warm-up and waits for a line on stdin, so the bench can count the
calls of the measured events alone."""

import importlib
import os
import json
import resource
import sys
import time
import uuid


class Context:
    function_name = "bench-peer"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-central-1:123456789012:function:bench-peer"
    aws_request_id = str(uuid.uuid4())

    @staticmethod
    def get_remaining_time_in_millis():
        return 300_000


started = time.perf_counter()
handler = importlib.import_module(sys.argv[2] if len(sys.argv) > 2 else "handler")

init_ms = (time.perf_counter() - started) * 1000
events = json.load(open(sys.argv[1]))
warm, measured = events[0], events[1:]
result = handler.lambda_handler(warm, Context())
assert not result["batchItemFailures"], result
if os.environ.get("BENCH_PAUSE_AFTER_WARM"):
    print("warm", file=sys.stderr, flush=True)
    sys.stdin.readline()
messages = 0
started = time.perf_counter()
for event in measured:
    result = handler.lambda_handler(event, Context())
    assert not result["batchItemFailures"], result
    messages += len(event["Records"])
elapsed = (time.perf_counter() - started) * 1000
print(
    json.dumps(
        {
            "per_message_ms": elapsed / messages,
            "messages": messages,
            "init_ms": init_ms,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "python": sys.version.split()[0],
        }
    )
)
