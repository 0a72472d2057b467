"""Load generator for mockserver.py, run as its own process: C concurrent clients, each with its own
connection, read one instance after another (the call a create/destroy poll makes) for D seconds.

    python bench/_load.py --endpoints FILE --provider crusoe|lambda|nebius --ids ID,ID,... --clients 32 --seconds 5

Prints {"requests": n, "errors": n, "seconds": s, "latencies_ms": [...]} on stdout. Clients are lean (raw
http.client with keep-alive; a grpc channel per client with its own connection) so the server is measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", type=Path, required=True)
    parser.add_argument("--provider", choices=("crusoe", "lambda", "nebius"), required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    endpoints = json.loads(args.endpoints.read_text())
    ids = args.ids.split(",")
    make = {"crusoe": crusoe_client, "lambda": lambda_client, "nebius": nebius_client}[args.provider]
    clients = [make(endpoints[args.provider], ids) for _ in range(args.clients)]
    for client in clients:  # connect and warm up
        client()
    results: list[tuple[int, int, list[float]]] = []
    start = threading.Barrier(args.clients + 1)
    stop_at: list[float] = []
    threads = [threading.Thread(target=_loop, args=(c, start, stop_at, results)) for c in clients]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    stop_at.append(began + args.seconds)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    latencies = [x for _, _, lat in results for x in lat]
    json.dump({"requests": sum(r[0] for r in results), "errors": sum(r[1] for r in results), "seconds": elapsed,
               "latencies_ms": latencies}, sys.stdout)
    return 0


def _loop(call: Callable[[], bool], start: threading.Barrier, stop_at: list[float], results: list) -> None:
    start.wait()
    while not stop_at:
        time.sleep(0)
    deadline = stop_at[0]
    done = errors = 0
    latencies: list[float] = []
    while (now := time.perf_counter()) < deadline:
        ok = call()
        latencies.append((time.perf_counter() - now) * 1000)
        done += 1
        errors += not ok
    results.append((done, errors, latencies))


class _Rest:
    """One keep-alive HTTP connection issuing GET requests round-robin over `paths`."""

    def __init__(self, url: str, paths: list[str], headers: Callable[[str], dict[str, str]]) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        self.paths, self.headers, self.n = paths, headers, 0

    def __call__(self) -> bool:
        path = self.paths[self.n % len(self.paths)]
        self.n += 1
        self.conn.request("GET", path, headers=self.headers(path))
        response = self.conn.getresponse()
        response.read()
        return response.status == 200


def crusoe_client(ep: dict[str, Any], ids: list[str]) -> _Rest:
    from crusoe_sdk._signing import auth_headers

    prefix = urllib.parse.urlsplit(ep["url"]).path
    paths = [f"{prefix}/projects/{ep['project_id']}/compute/vms/instances/{i}" for i in ids]
    signed = {p: auth_headers(ep["access_key_id"], ep["secret_key"], method="GET", path=p, query="") for p in paths}
    return _Rest(ep["url"], paths, signed.__getitem__)  # a signature stays valid for 5 minutes


def lambda_client(ep: dict[str, Any], ids: list[str]) -> _Rest:
    prefix = urllib.parse.urlsplit(ep["url"]).path
    headers = {"Authorization": f"Bearer {ep['api_key']}", "Accept": "application/json"}
    return _Rest(ep["url"], [f"{prefix}/instances/{i}" for i in ids], lambda _: headers)


def nebius_client(ep: dict[str, Any], ids: list[str]) -> Callable[[], bool]:
    import grpc
    from nebius_sdk._pb.nebius.compute.v1 import GetInstanceRequest, Instance

    channel = grpc.insecure_channel(ep["target"], options=[("grpc.use_local_subchannel_pool", 1)])
    get = channel.unary_unary("/nebius.compute.v1.InstanceService/Get",
                              request_serializer=GetInstanceRequest.SerializeToString,
                              response_deserializer=Instance.FromString)
    metadata = (("authorization", f"Bearer {ep['token']}"),)
    requests = [GetInstanceRequest(id=i) for i in ids]
    counter = [0]

    def call() -> bool:
        counter[0] += 1
        try:
            get(requests[counter[0] % len(requests)], metadata=metadata, timeout=30)
        except grpc.RpcError:
            return False
        return True

    return call


if __name__ == "__main__":
    sys.exit(main())
