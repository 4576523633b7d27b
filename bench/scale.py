#!/usr/bin/env python3
"""The driver of bench/scale.sh: jobs through a cluster of `mprobe serve` nodes.

    scale.py throughput TOKEN ORIGIN_URL JOBS NODE_BASE...
        Submits JOBS prefetch jobs (distinct URLs below ORIGIN_URL) round-robin to the nodes from 8
        threads, waits until every one is done, and prints one JSON line: jobs, seconds (first
        job created to last finished, by the jobs' own times), jobs_per_second, failed, and the
        queue's own cost per job in ms (the nodes' job store calls: claim, renew, progress,
        finish), from their /metrics.
    scale.py wait TOKEN ORIGIN_URL JOBS NODE_BASE...
        Submits JOBS jobs one at a time to an idle cluster, each once the one before has finished,
        and prints how long each waited between being created and being started (ms): p50, p99, max.
"""
import json
import math
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime


def request(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for attempt in range(50):
        try:
            with urllib.request.urlopen(req, timeout=30) as reply:
                return json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise
            time.sleep(0.1)
    raise RuntimeError(f"{method} {url}: 503 fifty times")


def metrics(base, token):
    req = urllib.request.Request(base + "/metrics")
    req.add_header("Authorization", "Bearer " + token)
    calls, seconds = {}, {}
    with urllib.request.urlopen(req, timeout=30) as reply:
        for line in reply.read().decode().splitlines():
            for name, table in (("mprobe_job_store_calls_total", calls), ("mprobe_job_store_seconds_total", seconds)):
                if line.startswith(name + "{"):
                    operation = line.split('"')[1]
                    table[operation] = float(line.split()[-1])
    return calls, seconds


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def job_body(origin, n, tag):
    return {"type": "prefetch", "url": f"{origin}?{tag}={n}", "seconds": 1}


def all_jobs(base, token):
    jobs, cursor = [], None
    while True:
        url = base + "/v1/jobs?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        page = request("GET", url, token)
        jobs += page["jobs"]
        cursor = page["next_cursor"]
        if not cursor:
            return jobs


def throughput(token, origin, count, nodes):
    tag = "t" + str(int(time.time() * 1000))
    ids, lock = [], threading.Lock()

    def submit(start):
        for n in range(start, count, 8):
            job = request("POST", nodes[n % len(nodes)] + "/v1/jobs", token, job_body(origin, n, tag))
            with lock:
                ids.append(job["id"])

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.time() + 600
    while time.time() < deadline:
        jobs = [j for j in all_jobs(nodes[0], token) if j["id"] in set(ids)]
        if len(jobs) == count and all(j["state"] in ("done", "failed", "cancelled") for j in jobs):
            break
        time.sleep(0.2)
    else:
        raise RuntimeError("jobs still not finished after 600 s")
    first = min(when(j["created"]) for j in jobs)
    last = max(when(j["finished"]) for j in jobs)
    calls, seconds = {}, {}
    for base in nodes:
        c, s = metrics(base, token)
        for k, v in c.items():
            calls[k] = calls.get(k, 0) + v
        for k, v in s.items():
            seconds[k] = seconds.get(k, 0) + v
    queue = sum(seconds.get(k, 0) for k in ("claim", "renew", "progress", "finish"))
    each = {k: round(1000 * seconds.get(k, 0) / max(1, calls.get(k, 0)), 2) for k in ("claim", "progress", "finish")}
    result = {
        "jobs": count, "seconds": round(last - first, 3), "jobs_per_second": round(count / (last - first), 2),
        "failed": sum(1 for j in jobs if j["state"] != "done"), "queue_ms_per_job": round(1000 * queue / count, 2),
    }
    result["row"] = "%s (%s, %s, %s)" % (result["queue_ms_per_job"], each["claim"], each["progress"], each["finish"])
    print(json.dumps(result))


def wait(token, origin, count, nodes):
    tag = "w" + str(int(time.time() * 1000))
    waits = []
    for n in range(count):
        job = request("POST", nodes[n % len(nodes)] + "/v1/jobs", token, job_body(origin, n, tag))
        deadline = time.time() + 60
        while job["state"] not in ("done", "failed", "cancelled") and time.time() < deadline:
            time.sleep(0.02)
            job = request("GET", nodes[0] + "/v1/jobs/" + job["id"], token)
        if job["started"] is None:
            raise RuntimeError(f"job {job['id']} never started: {job}")
        waits.append(1000 * (when(job["started"]) - when(job["created"])))
        time.sleep(0.05)  # every worker idle again, as in a quiet cluster
    waits.sort()
    pick = lambda q: waits[max(0, math.ceil(q * len(waits)) - 1)]  # nearest rank
    result = {"jobs": count, "p50_ms": round(pick(0.5), 1), "p99_ms": round(pick(0.99), 1), "max_ms": round(waits[-1], 1)}
    result["row"] = "%s / %s / %s" % (result["p50_ms"], result["p99_ms"], result["max_ms"])
    print(json.dumps(result))


if __name__ == "__main__":
    mode, token, origin, count, nodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    {"throughput": throughput, "wait": wait}[mode](token, origin, count, nodes)
