#!/usr/bin/env python3
"""Measuring helper for bench/client.sh and bench/server.sh.

The shell scripts start and stop servers; this file does what shell does badly: run one load
generator pinned to a core and read its exact CPU time (wait4's rusage, through rusage.c: user+sys
of that process and nothing else), read a running server's CPU time from /proc/PID/stat around the measured window,
count a server's syscalls over the window (perf or strace, attached before the load starts and
detached after it ends, so the count covers exactly that load), parse each tool's figures, and
print medians and ratios.

Every run appends one JSON object per line to a records file; the summaries read that file, so a
run can be re-summarised later (`measure.py summary-client records.jsonl`).

Subcommands: port, wait-port, resplen, body-len, docroot, syscall-tool, run, summary-client,
summary-server, summary-auth, summary-cgi, summary-fastcgi.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")

# The IO-Lite experiment's sizes (500 B to 200 KB) and 1 MiB; KB here means KiB.
BW_SIZES = {
    "500": 500,
    "1k": 1024,
    "2k": 2 * 1024,
    "3k": 3 * 1024,
    "5k": 5 * 1024,
    "7k": 7 * 1024,
    "10k": 10 * 1024,
    "15k": 15 * 1024,
    "20k": 20 * 1024,
    "50k": 50 * 1024,
    "100k": 100 * 1024,
    "200k": 200 * 1024,
    "1m": 1024 * 1024,
}


class Failure(Exception):
    """A measurement that cannot be trusted: reported, and the script exits non-zero."""


# ---------------------------------------------------------------------------------------------
# small helpers used by the shell scripts


def cmd_port(_args: argparse.Namespace) -> None:
    """Print a free loopback TCP port (the kernel's choice; the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def cmd_wait_port(args: argparse.Namespace) -> None:
    """Poll a connect until the server accepts, the server process dies, or the deadline passes.

    --port is 127.0.0.1:PORT; --unix PATH a unix stream socket (a FastCGI application's).
    """
    if (args.port is None) == (args.unix is None):
        raise Failure("wait-port: give --port or --unix")
    where = args.unix or f"127.0.0.1:{args.port}"
    deadline = time.monotonic() + args.timeout
    while True:
        if args.pid and not pid_alive(args.pid):
            raise Failure(f"process {args.pid} exited before listening on {where}")
        try:
            if args.unix:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(0.5)
                    s.connect(args.unix)
            else:
                with socket.create_connection(("127.0.0.1", args.port), timeout=0.5):
                    pass
            return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise Failure(f"nothing listening on {where} after {args.timeout} s")
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def cmd_resplen(args: argparse.Namespace) -> None:
    """Print the exact length (head + body) of the response to a keep-alive GET of PATH.

    cfloor reads until that many bytes have arrived, so it must be exact for the server it loads.
    """
    req = f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", args.port), timeout=5) as s:
        s.sendall(req)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise Failure("connection closed before the response head ended")
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        if not head.startswith("HTTP/1.1 200"):
            raise Failure(f"GET {args.path}: {head.splitlines()[0]!r}, expected 200")
        m = re.search(r"(?im)^content-length:\s*(\d+)\s*$", head)
        if not m:
            raise Failure(f"GET {args.path}: no Content-Length")
        print(len(head) + 4 + int(m.group(1)))


def cmd_body_len(args: argparse.Namespace) -> None:
    """Print the body length of a GET of PATH (any framing: length, chunked or close); fail
    unless the status is 200."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
    try:
        conn.request("GET", args.path)
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as e:
        raise Failure(f"GET {args.path}: {e}") from e
    finally:
        conn.close()
    if resp.status != 200:
        raise Failure(f"GET {args.path}: status {resp.status}, expected 200")
    print(len(body))


def cmd_docroot(args: argparse.Namespace) -> None:
    """Write NAME.bin for every benchmark size, and the pipelined page's workload file."""
    os.makedirs(args.dir, exist_ok=True)
    for name, size in BW_SIZES.items():
        # Printable, not compressible to nothing, the same on every run.
        pattern = b"flint-bench-0123456789abcdefghijklmnopqrstuvwxyz\n"
        body = (pattern * (size // len(pattern) + 1))[:size]
        with open(os.path.join(args.dir, f"{name}.bin"), "wb") as f:
            f.write(body)


def cmd_syscall_tool(_args: argparse.Namespace) -> None:
    """Print `perf` if perf can count raw_syscalls:sys_enter here, else `strace`, else `none`."""
    try:
        r = subprocess.run(
            ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if r.returncode == 0 and re.search(r"^\d+,", r.stderr, re.M):
            print("perf")
            return
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        subprocess.run(["strace", "-V"], capture_output=True, timeout=20, check=True)
        print("strace")
    except (OSError, subprocess.SubprocessError):
        print("none")


# ---------------------------------------------------------------------------------------------
# server-side counters


def proc_cpu_us(pid: int) -> float:
    """utime+stime of a whole process (all its threads, live and exited) in microseconds."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError as e:
        raise Failure(f"server process {pid} is gone") from e
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) * 1e6 / CLK_TCK


def cgroup_cpu_us(cgroup: str) -> float:
    """CPU time of every process that ever ran in a cgroup (exited or not, reaped or not)."""
    try:
        v1 = os.path.join(cgroup, "cpuacct.usage")
        if os.path.exists(v1):
            with open(v1, encoding="ascii") as f:
                return int(f.read()) / 1e3
        with open(os.path.join(cgroup, "cpu.stat"), encoding="ascii") as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return float(line.split()[1])
    except OSError as e:
        raise Failure(f"cannot read the CPU time of cgroup {cgroup}: {e}") from e
    raise Failure(f"no usage_usec in {cgroup}/cpu.stat")


def cgroup_own_cpu_us(cgroup: str, comms: set[str]) -> dict[int, float]:
    """utime+stime of each live process of the cgroup whose name is one of `comms` (the server's
    own processes, as against the programs it runs), by PID."""
    out = {}
    with open(os.path.join(cgroup, "cgroup.procs"), encoding="ascii") as f:
        pids = [int(x) for x in f.read().split()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                text = f.read()
        except OSError:
            continue  # gone meanwhile: a program that ended
        comm = text[text.index("(") + 1:text.rindex(")")]
        if comm in comms:
            fields = text.rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) * 1e6 / CLK_TCK
    return out


def proc_runtime_us(pid: int) -> float:
    """CPU time (user + system) of every thread of a process, from /proc/PID/task/*/schedstat
    (the scheduler's sum_exec_runtime, in nanoseconds); 0 for a process that is gone."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return total / 1e3


def proc_tree_cpu_us(root: int) -> float:
    """CPU time of a process and of its live children (an application's master and its pool of
    workers: php-fpm, bench/fcgi-responder.c), in microseconds. Read from the scheduler's
    nanosecond runtime, not /proc/PID/stat: each of 40 workers holds a few ms of a run, and
    /proc/PID/stat's clock ticks (10 ms) would round each to nothing. A child that exits within
    the window takes its CPU out of the sum, so the pools measured never recycle workers."""
    if not pid_alive(root):
        raise Failure(f"application process {root} is gone")
    total = proc_runtime_us(root)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if ppid == root:
            total += proc_runtime_us(int(entry))
    return total


class SyscallCounter:
    """Counts a process's syscalls between start() and stop(), with perf or strace.

    perf starts with its events disabled and is enabled through a control FIFO that acknowledges,
    so counting has begun when start() returns; strace has attached to every thread when it prints
    its first "attached" line. Either way no fixed sleep is needed.
    """

    def __init__(self, tool: str, pid: int, workdir: str):
        self.tool, self.pid, self.workdir = tool, pid, workdir
        self.out = os.path.join(workdir, f"syscalls.{tool}.out")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 15.0) -> None:
        if self.tool == "perf":
            ctl, ack = os.path.join(self.workdir, "perf.ctl"), os.path.join(self.workdir, "perf.ack")
            for p in (ctl, ack):
                if os.path.exists(p):
                    os.unlink(p)
                os.mkfifo(p)
            # O_RDWR: opening a FIFO this way never blocks waiting for the other end.
            self.ctl_fd = os.open(ctl, os.O_RDWR)
            self.ack_fd = os.open(ack, os.O_RDWR)
            self.proc = subprocess.Popen(
                ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", str(self.pid),
                 "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-o", self.out],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            self._command("enable", timeout)
        elif self.tool == "strace":
            self.proc = subprocess.Popen(
                ["strace", "-c", "-f", "-p", str(self.pid), "-o", self.out],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.proc.stderr], [], [], left)[0]:
                    raise Failure("strace did not attach in time")
                line = self.proc.stderr.readline()
                if not line:
                    raise Failure("strace exited before attaching (ptrace not allowed?)")
                if "attached" in line:
                    break
        else:
            raise Failure(f"unknown syscall counter {self.tool!r}")

    def _command(self, word: str, timeout: float) -> None:
        os.write(self.ctl_fd, word.encode() + b"\n")
        if not select.select([self.ack_fd], [], [], timeout)[0]:
            raise Failure(f"perf did not acknowledge {word!r} (cannot attach to pid {self.pid}?)")
        os.read(self.ack_fd, 64)

    def stop(self) -> int:
        assert self.proc is not None
        if self.tool == "perf":
            self._command("disable", 15.0)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure(f"{self.tool} did not stop")
        if self.tool == "perf":
            os.close(self.ctl_fd)
            os.close(self.ack_fd)
        with open(self.out, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if self.tool == "perf":
            m = re.search(r"^(\d+),[^\n]*raw_syscalls:sys_enter", text, re.M)
        else:
            m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$", text, re.M)
        if not m:
            raise Failure(f"cannot read the syscall count from {self.out}:\n{text}")
        return int(m.group(1))

    def breakdown(self) -> dict[str, int]:
        """strace only: calls per syscall name."""
        if self.tool != "strace":
            return {}
        calls = {}
        with open(self.out, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
                if m and m.group(2) != "total":
                    calls[m.group(2)] = int(m.group(1))
        return calls


# ---------------------------------------------------------------------------------------------
# parsing load generators' output

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_wrk(text: str) -> dict:
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", text, re.M)
    rps = re.search(r"^Requests/sec:\s*([\d.]+)", text, re.M)
    if not m or not rps:
        raise Failure(f"cannot parse wrk's output:\n{text}")
    errors = 0
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if sock:
        errors += sum(int(x) for x in sock.groups())
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if non2xx:
        errors += int(non2xx.group(1))
    return {
        "requests": int(m.group(1)),
        "duration_s": float(m.group(2)) * UNITS[m.group(3)],
        "rps": float(rps.group(1)),
        "errors": errors,
    }


def parse_h2load(text: str) -> dict:
    fin = re.search(r"^finished in ([\d.]+)(us|ms|s|m|h), ([\d.]+) req/s", text, re.M)
    req = re.search(r"^requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, "
                    r"(\d+) errored, (\d+) timeout", text, re.M)
    if not fin or not req:
        raise Failure(f"cannot parse h2load's output:\n{text}")
    return {"requests": int(req.group(1)), "duration_s": float(fin.group(1)) * UNITS[fin.group(2)],
            "rps": float(fin.group(3)),
            "errors": int(req.group(2)) + int(req.group(3)) + int(req.group(4))}


def parse_cfloor(text: str) -> dict:
    m = re.search(r"^(\d+) requests in ([\d.]+) s: (\d+) req/s", text, re.M)
    if not m:
        raise Failure(f"cannot parse cfloor's output:\n{text}")
    return {"requests": int(m.group(1)), "duration_s": float(m.group(2)),
            "rps": int(m.group(1)) / float(m.group(2)), "errors": 0}


def parse_flint(json_path: str) -> dict:
    try:
        with open(json_path, encoding="utf-8") as f:
            s = json.load(f)["summary"]
        return {"requests": int(s["requests"]), "duration_s": float(s["duration_s"]),
                "rps": float(s["requests_per_s"]), "errors": int(s.get("errors", 0)),
                "connects": int(s.get("connects", 0))}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Failure(f"cannot read summary.requests/requests_per_s/duration_s from {json_path}: {e}")


def parse_oha(json_path: str) -> dict:
    """oha's `--output-format json -o FILE`: requests are the responses counted by status."""
    try:
        with open(json_path, encoding="utf-8") as f:
            doc = json.load(f)
        requests = sum(int(n) for n in doc["statusCodeDistribution"].values())
        ok = int(doc["statusCodeDistribution"].get("200", 0))
        duration = float(doc["summary"]["total"])
        return {"requests": ok, "duration_s": duration, "rps": ok / duration if duration else 0.0,
                "errors": requests - ok + sum(int(n) for n in doc["errorDistribution"].values())}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Failure(f"cannot read statusCodeDistribution/summary.total from {json_path}: {e}")


# ---------------------------------------------------------------------------------------------
# one measured run


def cmd_run(args: argparse.Namespace) -> None:
    """Run one load generator and append its record: rate, client CPU and RSS, server CPU/syscalls."""
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        raise Failure("run: no command given")
    labels = dict(kv.split("=", 1) for kv in args.label)
    workdir = os.path.dirname(os.path.abspath(args.log))
    counter = None
    if args.syscalls != "none":
        if not args.server_pid:
            raise Failure("--syscalls needs --server-pid")
        counter = SyscallCounter(args.syscalls, args.server_pid, workdir)
        counter.start()

    ru_file = os.path.join(workdir, "rusage.out")
    if os.path.exists(ru_file):
        os.unlink(ru_file)
    cpu0 = proc_cpu_us(args.server_pid) if args.server_pid else 0.0
    comms = set(args.server_comm.split(",")) if args.server_comm else set()
    if args.server_cgroup:
        group0 = cgroup_cpu_us(args.server_cgroup)
        own0 = cgroup_own_cpu_us(args.server_cgroup, comms)


    app0 = proc_tree_cpu_us(args.app_pid) if args.app_pid else 0.0
    with open(args.log, "w", encoding="utf-8") as log:
        # The launcher (rusage.c) pins, runs and wait4s the tool, and writes the tool's own
        # rusage: see rusage.c for why Python does not fork the tool itself.
        launcher = [args.launcher, str(-1 if args.cpu is None else args.cpu),
                    str(int(args.timeout)), ru_file]
        child = subprocess.Popen(launcher + cmd, stdout=log, stderr=subprocess.STDOUT)

        def overdue(_sig, _frame):
            child.kill()
            raise Failure(f"{args.launcher} did not end: the tool outlived its timeout")

        # A blocking wait (no polling on either core), bounded by an alarm as a last resort.
        signal.signal(signal.SIGALRM, overdue)
        signal.alarm(int(args.timeout) + 30)
        try:
            child.wait()
        finally:
            signal.alarm(0)
    cpu1 = proc_cpu_us(args.server_pid) if args.server_pid else 0.0
    if args.server_cgroup:
        own1 = cgroup_own_cpu_us(args.server_cgroup, comms)
        group1 = cgroup_cpu_us(args.server_cgroup)


    app1 = proc_tree_cpu_us(args.app_pid) if args.app_pid else 0.0
    syscalls = counter.stop() if counter else None

    with open(args.log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if child.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited with {child.returncode} (137: killed after "
                      f"its {args.timeout:.0f} s timeout):\n{text[-3000:]}")
    try:
        with open(ru_file, encoding="ascii") as f:
            utime_us, stime_us, maxrss_kib, _ = (int(x) for x in f.read().split())
    except (OSError, ValueError) as e:
        raise Failure(f"no rusage from {args.launcher}: {e}")
    if args.parse == "wrk":
        res = parse_wrk(text)
    elif args.parse == "cfloor":
        res = parse_cfloor(text)
    elif args.parse == "h2load":
        res = parse_h2load(text)
    elif args.parse == "oha":
        res = parse_oha(args.json_file)
    else:
        res = parse_flint(args.json_file)
    if res["requests"] <= 0:
        raise Failure(f"{' '.join(cmd)} completed no requests:\n{text[-3000:]}")

    n = res["requests"]
    rec = dict(labels)
    rec.update(res)
    rec["cmd"] = " ".join(cmd)
    rec["client_cpu_us"] = float(utime_us + stime_us)
    rec["client_cpu_us_per_req"] = rec["client_cpu_us"] / n
    rec["client_maxrss_kib"] = maxrss_kib
    if args.server_pid:
        rec["server_cpu_us"] = cpu1 - cpu0
        rec["server_cpu_us_per_req"] = (cpu1 - cpu0) / n
    if args.server_cgroup:
        # The server's own processes (a process started within the window counts whole), and
        # the rest of the cgroup: the programs it ran, however they ended and whoever reaped them.
        own = sum(t - own0.get(pid, 0.0) for pid, t in own1.items())
        total = group1 - group0
        rec["server_cpu_us"] = own
        rec["server_cpu_us_per_req"] = own / n
        rec["children_cpu_us_per_req"] = max(total - own, 0.0) / n
        rec["total_cpu_us_per_req"] = total / n


    if args.app_pid:
        rec["app_cpu_us"] = app1 - app0
        rec["app_cpu_us_per_req"] = (app1 - app0) / n
    if syscalls is not None:
        rec["syscall_tool"] = args.syscalls
        rec["syscalls"] = syscalls
        rec["syscalls_per_req"] = syscalls / n
        if counter and counter.breakdown():
            rec["syscall_breakdown_per_req"] = {
                k: v / n for k, v in sorted(counter.breakdown().items(), key=lambda kv: -kv[1])}
    if "size_bytes" in rec:
        rec["body_mb_per_s"] = res["rps"] * int(rec["size_bytes"]) / 1e6
    with open(args.out, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")

    parts = [f"{res['rps']:>10.0f} req/s", f"{n} req"]
    parts.append(f"client {rec['client_cpu_us_per_req']:.2f} us/req, maxrss {maxrss_kib} KiB")
    if args.server_cgroup:
        parts.append(f"server {rec['server_cpu_us_per_req']:.2f} + programs "
                     f"{rec['children_cpu_us_per_req']:.2f} us/req")
    elif args.server_pid:
        parts.append(f"server {rec['server_cpu_us_per_req']:.2f} us/req")
    if args.app_pid:
        parts.append(f"app {rec['app_cpu_us_per_req']:.2f} us/req")
    if syscalls is not None:
        parts.append(f"{rec['syscalls_per_req']:.2f} syscalls/req ({args.syscalls})")
    if res["errors"]:
        parts.append(f"ERRORS {res['errors']}")
    tag = " ".join(f"{k}={v}" for k, v in labels.items() if k != "title")
    print(f"  {tag}: " + ", ".join(parts), file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# summaries


def load_records(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def spread(values: list[float], fmt: str) -> str:
    """'median (min-max)' so the reader sees the noise next to the figure."""
    if not values:
        return "-"
    m = format(statistics.median(values), fmt)
    if len(values) == 1:
        return m
    return f"{m} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt_ratio(a: float | None, b: float | None) -> str:
    r = ratio(a, b)
    return "-" if r is None else f"{r:.3f}"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                             for i, c in enumerate(r)))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


# A process busy this share of its core or more is taken as saturated (its bottleneck reached).
SATURATED = 0.9


def paired(recs: list[dict], a: str, b: str, key: str) -> float | None:
    """Median over rounds of a's `key` divided by b's in the same round."""
    rounds: dict[str, dict[str, dict]] = {}
    for r in recs:
        rounds.setdefault(str(r.get("round")), {})[r["tool"]] = r
    vals = [rr[a][key] / rr[b][key] for rr in rounds.values()
            if a in rr and b in rr and rr[a].get(key) is not None and rr[b].get(key)]
    return med(vals)


def cmd_summary_client(args: argparse.Namespace) -> None:
    recs = load_records(args.records)
    main = [r for r in recs if r.get("kind") == args.kind]
    tools = [t for t in ("flint", "wrk", "h2load", "cfloor") if any(r["tool"] == t for r in main)]
    stats: dict[str, dict] = {}
    rows = [["client", "runs", "requests/s", "client CPU us/req", "server CPU us/req",
             "server busy", "max RSS KiB", "errors"]]
    for t in tools:
        rs = [r for r in main if r["tool"] == t]
        col = {k: [r[k] for r in rs if k in r] for k in
               ("rps", "client_cpu_us_per_req", "server_cpu_us_per_req", "client_maxrss_kib")}
        # The share of its core the server used: near 1, the server is the bottleneck.
        col["server_busy"] = [r["rps"] * r["server_cpu_us_per_req"] / 1e6 for r in rs
                              if r.get("rps") and r.get("server_cpu_us_per_req")]
        stats[t] = {k: med(v) for k, v in col.items()}
        stats[t]["runs"] = len(rs)
        stats[t]["errors"] = sum(r["errors"] for r in rs)
        rows.append([t, str(len(rs)), spread(col["rps"], ".0f"),
                     spread(col["client_cpu_us_per_req"], ".2f"),
                     spread(col["server_cpu_us_per_req"], ".2f"),
                     spread(col["server_busy"], ".2f"),
                     spread(col["client_maxrss_kib"], ".0f"), str(stats[t]["errors"])])
    print(table(rows))
    print("(medians over rounds; min-max in parentheses)\n")
    f, w, c = stats.get("flint", {}), stats.get("wrk", {}), stats.get("cfloor", {})
    h = stats.get("h2load", {})
    ratios = {
        "flint/h2load requests_per_s": ratio(f.get("rps"), h.get("rps")),
        "flint/h2load client_cpu_per_req": ratio(f.get("client_cpu_us_per_req"),
                                                 h.get("client_cpu_us_per_req")),
        "flint/wrk requests_per_s": ratio(f.get("rps"), w.get("rps")),
        "flint/wrk client_cpu_per_req": ratio(f.get("client_cpu_us_per_req"),
                                              w.get("client_cpu_us_per_req")),
        "flint/cfloor client_cpu_per_req": ratio(f.get("client_cpu_us_per_req"),
                                                 c.get("client_cpu_us_per_req")),
        "wrk/cfloor client_cpu_per_req": ratio(w.get("client_cpu_us_per_req"),
                                               c.get("client_cpu_us_per_req")),
    }
    # The same ratios taken within each round, then the median: a round's contestants ran
    # back to back, so the machine's drift between rounds cancels in each pair.
    ratios["flint/wrk requests_per_s (paired)"] = paired(main, "flint", "wrk", "rps")
    ratios["flint/wrk client_cpu_per_req (paired)"] = paired(main, "flint", "wrk",
                                                            "client_cpu_us_per_req")
    ratios["flint/h2load requests_per_s (paired)"] = paired(main, "flint", "h2load", "rps")
    ratios["flint/h2load client_cpu_per_req (paired)"] = paired(main, "flint", "h2load",
                                                               "client_cpu_us_per_req")
    # What each client's traffic costs the server: its CPU over the client's run per request
    # counted (the requests in flight at the end, answered and not counted, are in it for both).
    # On a loaded machine, where requests/s compare the machine's state, this still compares
    # the traffic.
    ratios["flint/h2load server_cpu_per_req (paired)"] = paired(main, "flint", "h2load",
                                                               "server_cpu_us_per_req")
    for k, v in ratios.items():
        if v is not None or "paired" not in k:
            print(f"{k:<42} {'-' if v is None else format(v, '.3f')}")
    if h:
        # Whose speed the requests/s measure: when both clients keep the server's core busy,
        # the server is the bottleneck and equal requests/s is what a client can show.
        def share(t: str, key: str) -> float | None:
            v, rps = stats[t].get(key), stats[t].get("rps")
            return v * rps / 1e6 if v is not None and rps else None

        def saturated(key: str) -> bool:
            return all((b := share(t, key)) is not None and b >= SATURATED
                       for t in ("flint", "h2load"))

        if saturated("server_cpu_us_per_req"):
            verdict = "server-bound: both clients saturate the server; equal requests/s is the claim"
        elif saturated("client_cpu_us_per_req"):
            verdict = "client-bound: both clients use their whole core"
        else:
            verdict = ("neither the server nor the clients used a whole core (other load on the "
                       "machine?): requests/s compare the machine's state, not the clients")
        shown = "; ".join(
            f"{t} {format(share(t, 'client_cpu_us_per_req') or 0, '.2f')}/"
            f"{format(share(t, 'server_cpu_us_per_req') or 0, '.2f')}" for t in ("flint", "h2load"))
        print(f"busy share of a core, client/server: {shown}: {verdict}")
    memory = {}
    mem_kind = args.memory_kind or ("memory" if args.kind == "client" else None)
    big = [r for r in recs if mem_kind and r.get("kind") == mem_kind]
    if big and f.get("client_maxrss_kib"):
        n_big, n_small = int(big[0]["connections"]), int(args.connections)
        rss_big = big[0]["client_maxrss_kib"]
        per_conn = (rss_big - f["client_maxrss_kib"]) / (n_big - n_small)
        memory = {"connections_small": n_small, "maxrss_kib_small": f["client_maxrss_kib"],
                  "connections_big": n_big, "maxrss_kib_big": rss_big,
                  "kib_per_connection": per_conn}
        print(f"\nflint client memory: max RSS {f['client_maxrss_kib']:.0f} KiB at -c {n_small}, "
              f"{rss_big} KiB at -c {n_big} ({big[0].get('connects', '?')} connects): "
              f"{per_conn:.2f} KiB per connection "
              f"(({rss_big} - {f['client_maxrss_kib']:.0f}) / {n_big - n_small})")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump({"meta": dict(kv.split("=", 1) for kv in args.meta), "medians": stats,
                       "ratios": ratios, "memory": memory, "runs": recs}, fo, indent=2)
        print(f"\nresults written to {args.json_out}")


def cmd_summary_server(args: argparse.Namespace) -> None:
    recs = load_records(args.records)
    out: dict = {"meta": dict(kv.split("=", 1) for kv in args.meta), "cases": {},
                 "bandwidth": {}, "runs": recs}
    cases = []
    for r in recs:
        key = (r["case"], r["load"])
        if r["case"] != "bw" and key not in cases:
            cases.append(key)
    for case, load in cases:
        rs = [r for r in recs if r["case"] == case and r["load"] == load]
        servers = [s for s in ("nginx", "flint", "h2o", "floor") if any(r["server"] == s for r in rs)]
        print(f"\n== {case}: {rs[0].get('title', case)}; load: {load}")
        rows = [["server", "runs", "requests/s", "server CPU us/req", "syscalls/req",
                 "vs nginx: CPU", "req/s", "syscalls", "errors"]]
        st = {}
        for s in servers:
            timed = [r for r in rs if r["server"] == s and r.get("purpose") == "timed"]
            traced = [r for r in rs if r["server"] == s and r.get("purpose") == "syscalls"]
            st[s] = {
                "rps": med([r["rps"] for r in timed]),
                "cpu": med([r["server_cpu_us_per_req"] for r in timed]),
                "sys": med([r["syscalls_per_req"] for r in traced]),
                "runs": len(timed),
                "errors": sum(r["errors"] for r in timed + traced),
                "syscall_tool": traced[0]["syscall_tool"] if traced else None,
                "syscall_breakdown_per_req": traced[0].get("syscall_breakdown_per_req")
                if traced else None,
            }
        n = st.get("nginx", {})
        for s in servers:
            timed = [r for r in rs if r["server"] == s and r.get("purpose") == "timed"]
            traced = [r for r in rs if r["server"] == s and r.get("purpose") == "syscalls"]
            rows.append([
                s, str(st[s]["runs"]), spread([r["rps"] for r in timed], ".0f"),
                spread([r["server_cpu_us_per_req"] for r in timed], ".2f"),
                spread([r["syscalls_per_req"] for r in traced], ".2f"),
                fmt_ratio(st[s]["cpu"], n.get("cpu")), fmt_ratio(st[s]["rps"], n.get("rps")),
                fmt_ratio(st[s]["sys"], n.get("sys")), str(st[s]["errors"]),
            ])
        for s in servers:
            st[s]["vs_nginx"] = {k: ratio(st[s][k], n.get(k)) for k in ("cpu", "rps", "sys")}
        print(table(rows))
        tools = {st[s]["syscall_tool"] for s in servers if st[s]["syscall_tool"]}
        if tools:
            print(f"(syscalls counted with {', '.join(sorted(tools))} in a separate run)")
        for s in servers:
            b = st[s]["syscall_breakdown_per_req"]
            if b:
                top = ", ".join(f"{k} {v:.2f}" for k, v in list(b.items())[:8])
                print(f"  {s} syscalls/req: {top}")
        out["cases"][f"{case}/{load}"] = st
    ka = [r["rps"] for r in recs if r["case"] == "ka" and r["server"] == "nginx"
          and r.get("purpose") == "timed"]
    for load in sorted({r["load"] for r in recs if r["case"] == "pipe"}):
        piped = [r["rps"] for r in recs if r["case"] == "pipe" and r["load"] == load
                 and r["server"] == "nginx" and r.get("purpose") == "timed"]
        if ka and piped and med(piped) < 0.5 * med(ka):
            print(f"\nnote: pipelined by {load}, nginx answers {med(piped):.0f} req/s, fewer than "
                  f"the {med(ka):.0f} req/s it answers unpipelined: nginx's stall on delayed ACKs "
                  "with deep pipelines (its CPU and syscalls per request are still valid).")
    bw = [r for r in recs if r["case"] == "bw"]
    if bw:
        servers = [s for s in ("nginx", "flint") if any(r["server"] == s for r in bw)]
        sizes = []
        for r in bw:
            if r["size"] not in sizes:
                sizes.append(r["size"])
        print(f"\n== bw: bandwidth, keep-alive; load: {bw[0]['load']}; body MB/s (10^6 B/s), "
              "medians; server CPU us/req in brackets")
        traced_any = any(r.get("purpose") == "syscalls" for r in bw)
        head = ["size"] + [f"{s} MB/s [us/req]" for s in servers]
        if traced_any:
            head += [f"{s} syscalls/req" for s in servers]
        if "flint" in servers and "nginx" in servers:
            head.append("flint/nginx MB/s")
        rows = [head]
        for size in sizes:
            row = [size]
            mbps = {}
            for s in servers:
                rs = [r for r in bw if r["size"] == size and r["server"] == s
                      and r.get("purpose") == "timed"]
                mbps[s] = med([r["body_mb_per_s"] for r in rs])
                cpu = med([r["server_cpu_us_per_req"] for r in rs])
                row.append(f"{mbps[s]:.1f} [{cpu:.1f}]" if mbps[s] is not None else "-")
                out["bandwidth"].setdefault(size, {})[s] = {"mb_per_s": mbps[s],
                                                             "server_cpu_us_per_req": cpu}
            if traced_any:
                for s in servers:
                    sc = med([r["syscalls_per_req"] for r in bw if r["size"] == size
                              and r["server"] == s and r.get("purpose") == "syscalls"])
                    row.append(f"{sc:.2f}" if sc is not None else "-")
                    out["bandwidth"].setdefault(size, {}).setdefault(s, {})["syscalls_per_req"] = sc
            if len(head) > len(row):
                row.append(fmt_ratio(mbps.get("flint"), mbps.get("nginx")))
            rows.append(row)
        print(table(rows))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump(out, fo, indent=2)
        print(f"\nresults written to {args.json_out}")


def cmd_summary_auth(args: argparse.Namespace) -> None:
    """bench/auth.sh: plain against auth (medians of the timed rounds), then one check's cost."""
    recs = load_records(args.records)
    rows = [["server", "runs", "requests/s", "server CPU us/req", "errors"]]
    st = {}
    for s in ("plain", "auth"):
        timed = [r for r in recs if r["server"] == s and r.get("purpose") == "timed"]
        st[s] = {"rps": med([r["rps"] for r in timed]),
                 "cpu": med([r["server_cpu_us_per_req"] for r in timed])}
        rows.append([s, str(len(timed)), spread([r["rps"] for r in timed], ".0f"),
                     spread([r["server_cpu_us_per_req"] for r in timed], ".2f"),
                     str(sum(r["errors"] for r in timed))])
    print(table(rows))
    # Paired: auth over plain within each round (they ran back to back), then the median.
    by_round: dict[str, dict[str, dict]] = {}
    for r in recs:
        if r.get("purpose") == "timed":
            by_round.setdefault(str(r["round"]), {})[r["server"]] = r
    pairs = [rr for rr in by_round.values() if "plain" in rr and "auth" in rr]
    for key, short, name in (("rps", "rps", "requests/s"),
                             ("server_cpu_us_per_req", "cpu", "server CPU per request")):
        vals = [rr["auth"][key] / rr["plain"][key] for rr in pairs if rr["plain"][key]]
        print(f"auth / plain, {name}: medians {fmt_ratio(st['auth'][short], st['plain'][short])}, "
              f"paired {spread(vals, '.3f')}")
    checks = [r for r in recs if r.get("purpose") == "check"]
    base = [r for r in checks if r.get("hash") == "none"]
    if checks:
        print("\none connection, every request checked (no verified credentials kept):")
        rows = [["hash", "requests/s", "server CPU us/req", "one check, ms"]]
        base_cpu = base[0]["server_cpu_us_per_req"] if base else None
        for r in checks:
            one = ("-" if r.get("hash") == "none" or base_cpu is None
                   else f"{(r['server_cpu_us_per_req'] - base_cpu) / 1000:.2f}")
            rows.append([r.get("hash", "?"), f"{r['rps']:.0f}",
                         f"{r['server_cpu_us_per_req']:.1f}", one])
        print(table(rows))


def paired_by(recs: list[dict], field: str, a: str, b: str, key: str) -> float | None:
    """Median over rounds of a's `key` over b's in the same round, contestants told by `field`."""
    rounds: dict[str, dict[str, dict]] = {}
    for r in recs:
        rounds.setdefault(str(r.get("round")), {})[r[field]] = r
    return med([rr[a][key] / rr[b][key] for rr in rounds.values()
                if a in rr and b in rr and rr[a].get(key) is not None and rr[b].get(key)])


def cmd_summary_cgi(args: argparse.Namespace) -> None:
    """bench/cgi.sh's tables: per case, each server's rate and CPU per request, split into the
    server's own processes and the programs they ran; then flint's ratios to each peer (in the
    static case, flint with a CGI mount to flint without one: flint-nocgi)."""
    recs = [r for r in load_records(args.records) if r.get("purpose") == "timed"]
    out: dict = {"meta": dict(kv.split("=", 1) for kv in args.meta), "cases": {}, "runs": recs}
    cases = []
    for r in recs:
        if r["case"] not in cases:
            cases.append(r["case"])
    for case in cases:
        rs = [r for r in recs if r["case"] == case]
        servers = []
        for r in rs:
            if r["server"] not in servers:
                servers.append(r["server"])
        print(f"\n== {case}: {rs[0].get('title', case)}; load: {rs[0]['load']}")
        rows = [["server", "runs", "requests/s", "server CPU us/req", "programs' CPU us/req",
                 "total CPU us/req", "core busy", "errors"]]
        st = {}
        for s in servers:
            mine = [r for r in rs if r["server"] == s]
            col = {k: [r[k] for r in mine] for k in ("rps", "server_cpu_us_per_req",
                                                      "children_cpu_us_per_req",
                                                      "total_cpu_us_per_req")}
            # The share of core 0 the server and its programs used: near 1, they were the limit.
            col["busy"] = [r["rps"] * r["total_cpu_us_per_req"] / 1e6 for r in mine]
            st[s] = {k: med(v) for k, v in col.items()}
            st[s]["runs"] = len(mine)
            st[s]["errors"] = sum(r["errors"] for r in mine)
            rows.append([s, str(len(mine)), spread(col["rps"], ".0f"),
                         spread(col["server_cpu_us_per_req"], ".1f"),
                         spread(col["children_cpu_us_per_req"], ".1f"),
                         spread(col["total_cpu_us_per_req"], ".1f"), spread(col["busy"], ".2f"),
                         str(st[s]["errors"])])
        print(table(rows))
        print("(medians over rounds; min-max in parentheses)")
        pairs = ([("flint", "flint-nocgi")] if case == "static"
                 else [("flint", s) for s in servers if s != "flint"])
        ratios = {}
        for a, b in pairs:
            if a not in st or b not in st:
                continue
            for key, name in (("rps", "requests_per_s"), ("server_cpu_us_per_req", "server_cpu"),
                              ("total_cpu_us_per_req", "total_cpu")):
                ratios[f"{a}/{b} {name}"] = {
                    "of_medians": ratio(st[a][key], st[b][key]),
                    "paired": paired_by(rs, "server", a, b, key)}
        if ratios:
            rows = [["ratio", "of medians", "paired (median of rounds)"]]
            for k, v in ratios.items():
                rows.append([k, fmt_ratio(v["of_medians"], 1.0), fmt_ratio(v["paired"], 1.0)])
            print(table(rows))
        out["cases"][case] = {"servers": st, "ratios": ratios}
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fo:
            json.dump(out, fo, indent=2)
        print(f"\nresults written to {args.json_out}")


def cmd_summary_fastcgi(args: argparse.Namespace) -> None:
    """bench/fastcgi.sh: per application, each server's medians, flint over each peer (medians
    and paired within a round), and the syscalls per request by name of the counted runs."""
    recs = load_records(args.records)
    for app in dict.fromkeys(r["app"] for r in recs):
        ours = [r for r in recs if r["app"] == app]
        servers = list(dict.fromkeys(r["server"] for r in ours))
        print(f"\n{app}: {ours[0].get('title', '')}")
        rows = [["server", "runs", "requests/s", "server CPU us/req", "app CPU us/req",
                 "server busy", "syscalls/req", "errors"]]
        st = {}
        for s in servers:
            timed = [r for r in ours if r["server"] == s and r.get("purpose") == "timed"]
            sys_runs = [r for r in ours if r["server"] == s and r.get("purpose") == "syscalls"]
            busy = [r["server_cpu_us"] / 1e6 / r["duration_s"] for r in timed if r["duration_s"]]
            st[s] = {k: med([r[k] for r in timed])
                     for k in ("rps", "server_cpu_us_per_req", "app_cpu_us_per_req")}
            sc = med([r["syscalls_per_req"] for r in sys_runs])
            rows.append([s, str(len(timed)), spread([r["rps"] for r in timed], ".0f"),
                         spread([r["server_cpu_us_per_req"] for r in timed], ".2f"),
                         spread([r["app_cpu_us_per_req"] for r in timed], ".2f"),
                         spread(busy, ".2f"), "-" if sc is None else f"{sc:.2f}",
                         str(sum(r["errors"] for r in timed + sys_runs))])
        print(table(rows))
        rounds: dict[str, dict[str, dict]] = {}
        for r in ours:
            if r.get("purpose") == "timed":
                rounds.setdefault(str(r["round"]), {})[r["server"]] = r
        for peer in (s for s in servers if s != "flint"):
            if "flint" not in st:
                break
            for key, name in (("rps", "requests/s"), ("server_cpu_us_per_req", "server CPU/req"),
                              ("app_cpu_us_per_req", "app CPU/req")):
                vals = [rr["flint"][key] / rr[peer][key] for rr in rounds.values()
                        if "flint" in rr and peer in rr and rr[peer][key]]
                print(f"flint/{peer} {name}: medians {fmt_ratio(st['flint'][key], st[peer][key])}"
                      f", paired {spread(vals, '.3f')}")
        for r in ours:
            if r.get("purpose") == "syscalls" and r.get("syscall_breakdown_per_req"):
                calls = ", ".join(f"{k} {v:.2f}" for k, v in r["syscall_breakdown_per_req"].items()
                                  if v >= 0.01)
                print(f"{r['server']} syscalls per request ({r['syscall_tool']}): {calls}")


# ---------------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("port").set_defaults(fn=cmd_port)
    s = sub.add_parser("wait-port")
    s.add_argument("--port", type=int)
    s.add_argument("--unix", help="a unix socket's path instead of a port")
    s.add_argument("--pid", type=int)
    s.add_argument("--timeout", type=float, default=10.0)
    s.set_defaults(fn=cmd_wait_port)
    s = sub.add_parser("resplen")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--path", default="/1k.bin")
    s.set_defaults(fn=cmd_resplen)
    s = sub.add_parser("body-len")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--path", default="/1k.bin")
    s.set_defaults(fn=cmd_body_len)
    s = sub.add_parser("docroot")
    s.add_argument("dir")
    s.set_defaults(fn=cmd_docroot)
    sub.add_parser("syscall-tool").set_defaults(fn=cmd_syscall_tool)
    s = sub.add_parser("run")
    s.add_argument("--out", required=True, help="records file (JSON lines) to append to")
    s.add_argument("--log", required=True, help="where the tool's output goes")
    s.add_argument("--parse", choices=["wrk", "cfloor", "flint", "h2load", "oha"], required=True)
    s.add_argument("--json-file", help="flint's --json FILE (oha's -o FILE)")
    s.add_argument("--cpu", type=int, help="pin the load generator to this CPU")
    s.add_argument("--launcher", required=True, help="the compiled rusage.c")
    s.add_argument("--server-pid", type=int, help="measure this server's CPU over the run")
    s.add_argument("--server-cgroup", help="measure this cgroup's CPU over the run (the server "
                   "and every program it started)")
    s.add_argument("--server-comm", help="with --server-cgroup: the server's own process names, "
                   "comma-separated (the rest of the cgroup's CPU is its programs')")


    s.add_argument("--app-pid", type=int,
                   help="measure this application's CPU (the process and its children)")
    s.add_argument("--syscalls", choices=["none", "perf", "strace"], default="none")
    s.add_argument("--timeout", type=float, default=120.0, help="kill the tool after this long")
    s.add_argument("--label", action="append", default=[], help="KEY=VALUE stored in the record")
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    s.set_defaults(fn=cmd_run)
    s = sub.add_parser("summary-client")
    s.add_argument("records")
    s.add_argument("--connections", type=int, default=40)
    s.add_argument("--kind", default="client", help="which records: client, or another label")
    s.add_argument("--memory-kind", help="the records of flint's many-connection run (default: "
                   "memory, for --kind client)")
    s.add_argument("--json-out")
    s.add_argument("--meta", action="append", default=[], help="KEY=VALUE for the JSON")
    s.set_defaults(fn=cmd_summary_client)
    s = sub.add_parser("summary-auth")
    s.add_argument("records")
    s.set_defaults(fn=cmd_summary_auth)
    s = sub.add_parser("summary-fastcgi")
    s.add_argument("records")
    s.set_defaults(fn=cmd_summary_fastcgi)
    s = sub.add_parser("summary-server")
    s.add_argument("records")
    s.add_argument("--json-out")
    s.add_argument("--meta", action="append", default=[], help="KEY=VALUE for the JSON")
    s.set_defaults(fn=cmd_summary_server)
    s = sub.add_parser("summary-cgi")
    s.add_argument("records")
    s.add_argument("--json-out")
    s.add_argument("--meta", action="append", default=[], help="KEY=VALUE for the JSON")
    s.set_defaults(fn=cmd_summary_cgi)
    args = p.parse_args()
    try:
        args.fn(args)
    except Failure as e:
        print(f"measure.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("measure.py: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
