#!/usr/bin/env python3
"""Decodes a Fairway trace with Perfetto's own protobuf definitions and checks
it against the run's results JSON (the simulator's `--results`).

    check_trace.py TRACE RESULTS.json

`perfetto_trace_pb2` comes from the `perfetto` package on PyPI (Perfetto's
published Python bindings); `cargo xtask test` (and `cargo xtask
trace-checks`) install it in target/tools/perfetto-venv. What is checked,
each against a figure the run reports by another path (docs/tracing.md):

- every message and field of trace/protos/perfetto_subset.proto, which the
  writer is generated from, has the number Perfetto's definitions give it;
- every packet decodes, and every ftrace event is one of those Fairway writes;
- per CPU, the `sched_switch` events are the CPU's `context_switches`;
- per task, the time between its switches in and out (to the run's end for
  the task still running) is its `runtime_ns`, exactly;
- the `sched_migrate_task` events are the tasks' `migrations`;
- one `sched_wakeup_new` per task that ran, one `sched_process_exit` per task
  that finished, a `sched_waking` before each `sched_wakeup` and a
  `sched_wakeup` after each `sched_waking` (the kernel's last one of a task
  may be alone: recording stopped while it was in flight);
- per task, its `sched_waking` events up to the end are its wake-ups run
  (the simulator's `wakeup_latency_ns.count`, the kernel's `wakeups`) plus
  its `pending_wakeups`, and from each `sched_wakeup` to its next switch-in
  by the end come as many latencies as the run counted, the largest its
  max: a timer event reached after its expiry (an overrun, a missed period)
  is no wake-up and has no latency (docs/report-format.md, "Overruns");
- `prev_state` is one of Linux's report values (R 0, S 1, X 0x10, R+ 0x100);
- the counter tracks (util_avg, util_est, load_avg below a thread track;
  cpuN util, capacity, uclamp_min, uclamp_max; pdN energy_nj; overutilized)
  all carry values; a task's util_avg and util_est and a CPU's capacity and
  clamps lie in 0..=1024 (a run queue's util_avg may exceed it for a while
  after tasks migrate in, as Linux's does, and load_avg is weighted);
  overutilized is 0 or 1; a domain's energy never decreases and ends on the
  run's final figure for that domain (the simulator records it at the run's
  end, the kernel when its report reads the meters); a CPU's signals have a
  value at or after the run's end (both record them once more there);
- per task group with CFS bandwidth control (the results' `groups`): a track
  named by its path, with `cpuN throttled` and `cpuN runtime_remaining` for
  every CPU and the pool's `runtime` below it; `throttled` is 0 or 1; per
  CPU the time between each 1 and the next 0 (closed intervals only: one
  still open at the run's end is not counted, as in `cpu.stat.local`),
  summed, is the CPU's `local_throttled_usec`, and over every CPU the
  group's `throttled_usec` (both in whole µs, rounded down from ns as the
  results are); `runtime` lies in 0..=quota+burst, and `runtime_remaining`
  is at most quota+burst (a CPU cannot hold more than the pool ever had;
  it is negative after an overrun), for the settings the results report,
  so for a run whose cpu.max does not change.

RESULTS.json is the simulator's `--results`, or the kernel runner's
`--report` (its run's `cpu_stats`, `tasks`, `wall_ns` and `energy_nj.pdN`
metrics and `groups` stand for the same figures; the kernel's report does
not say which tasks finished, so exits are not counted there, and a group's throttled time is
held against the intervals closed at the end or at any later event, as the
other figures are).

Prints one line of counts; exits 1 with the first mismatch.
"""
import collections
import json
import os
import re
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

KNOWN = {
    "sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new",
    "sched_migrate_task", "sched_process_exit", "cpu_frequency", "cpu_idle",
}


def fail(message):
    print(f"check_trace: {message}")
    sys.exit(1)


SUBSET = os.path.join(os.path.dirname(__file__), "..", "..", "trace", "protos", "perfetto_subset.proto")


def check_subset():
    """Each `message M { ... T name = N; ... }` of the subset, nested ones
    included, against Perfetto's descriptor of M: the same field number."""
    text = re.sub(r"//[^\n]*", "", open(SUBSET).read())
    stack = []
    checked = 0
    for token in re.finditer(r"(message|enum|oneof)\s+(\w+)\s*\{|\}|(\w+)\s*=\s*(\d+)\s*;", text):
        kind, name, field, number = token.groups()
        if kind:
            stack.append((kind, name))
        elif token.group(0) == "}":
            stack.pop()
        elif stack and stack[-1][0] in ("message", "oneof"):
            path = [n for k, n in stack if k == "message"]
            descriptor = getattr(pb, path[0]).DESCRIPTOR
            for nested in path[1:]:
                descriptor = descriptor.nested_types_by_name[nested]
            real = descriptor.fields_by_name.get(field)
            if real is None:
                fail(f"{'.'.join(path)}.{field}: no such field in Perfetto's definitions")
            if real.number != int(number):
                fail(f"{'.'.join(path)}.{field} = {number}, Perfetto's is {real.number}")
            checked += 1
    if checked < 50:
        fail(f"only {checked} fields of the subset read")
    return checked


def expected(results):
    """The figures the trace is checked against, from either kind of results:
    (per-CPU switches, end_ns, tasks, energy per domain). A task is a dict
    with name, runtime_ns, migrations, started, finished (None where the
    results do not say), wakeups and pending (wake-ups run, and made but not
    run at the end) and lat_max (their largest latency)."""
    if "runs" not in results:
        tasks = [{
            "name": t["name"], "runtime_ns": t["runtime_ns"], "migrations": t["migrations"],
            # Switched in at least once (a start is not a wake-up, so the
            # latency count alone misses a task that started and never slept).
            "started": t["runtime_ns"] > 0 or t["wakeup_latency_ns"]["count"] > 0,
            "finished": t["finished"], "wakeups": t["wakeup_latency_ns"]["count"],
            "pending": t["pending_wakeups"], "lat_max": t["wakeup_latency_ns"]["max"],
        } for t in results["tasks"]]
        switches = {c["cpu"]: c["context_switches"] for c in results["cpus"]}
        energy = {i: d["energy_nj"] for i, d in enumerate(results.get("energy", []))}
        return switches, results["end_ns"], tasks, energy
    if len(results["runs"]) != 1:
        fail(f"the report has {len(results['runs'])} runs; a traced run has one")
    run = results["runs"][0]
    tasks = [{
        "name": t["name"], "runtime_ns": t["runtime_ns"], "migrations": t["migrations"],
        "started": t["switches"] > 0, "finished": None, "wakeups": t["wakeups"],
        "pending": t["pending_wakeups"], "lat_max": t["lat_max_ns"],
    } for t in run["tasks"]]
    switches = {c["id"]: c["switches"] for c in run["cpu_stats"]}
    energy = {int(m["name"][len("energy_nj.pd"):]): m["value"]
              for m in run["metrics"] if m["name"].startswith("energy_nj.pd")}
    return switches, run["wall_ns"], tasks, energy


def main():
    if len(sys.argv) != 3:
        fail("usage: check_trace.py TRACE RESULTS.json")
    fields = check_subset()
    trace = pb.Trace()
    with open(sys.argv[1], "rb") as f:
        trace.ParseFromString(f.read())
    with open(sys.argv[2]) as f:
        results = json.load(f)

    counts = collections.Counter()
    switches = collections.defaultdict(list)  # cpu -> [(ts, prev_pid, next_pid)]
    names = {}
    tracks = {}
    plain_tracks = {}  # uuid -> name, of tracks without a counter (task groups)
    counter_values = collections.defaultdict(list)
    wakings = collections.defaultdict(list)  # pid -> its sched_waking times
    times = collections.defaultdict(list)  # event name -> times
    pid_times = collections.defaultdict(list)  # event name -> [(time, pid)]
    counter_times = collections.defaultdict(list)
    for packet in trace.packet:
        kind = packet.WhichOneof("data")
        if kind == "process_tree":
            for thread in packet.process_tree.threads:
                names[thread.tid] = thread.name
        elif kind == "ftrace_events":
            cpu = packet.ftrace_events.cpu
            for event in packet.ftrace_events.event:
                name = event.WhichOneof("event")
                if name not in KNOWN:
                    fail(f"cpu{cpu}: an ftrace event of kind {name}")
                counts[name] += 1
                times[name].append(event.timestamp)
                if name in ("sched_migrate_task", "sched_wakeup_new", "sched_waking", "sched_wakeup"):
                    pid_times[name].append((event.timestamp, getattr(event, name).pid))
                if name == "sched_waking":
                    wakings[event.sched_waking.pid].append(event.timestamp)
                if name == "sched_switch":
                    e = event.sched_switch
                    if e.prev_state not in (0, 1, 0x10, 0x100):
                        fail(f"cpu{cpu}: prev_state {e.prev_state} at {event.timestamp}")
                    switches[cpu].append((event.timestamp, e.prev_pid, e.next_pid))
        elif kind == "track_descriptor":
            d = packet.track_descriptor
            if d.HasField("counter"):
                tracks[d.uuid] = (d.name, d.parent_uuid if d.HasField("parent_uuid") else None)
            elif not d.HasField("thread"):
                plain_tracks[d.uuid] = d.name
        elif kind == "track_event":
            counter_values[packet.track_event.track_uuid].append(packet.track_event.counter_value)
            counter_times[packet.track_event.track_uuid].append(packet.timestamp)

    cpu_switches, end, tasks, energy = expected(results)
    # The simulator's figures are the trace's at the run's end. The kernel
    # reads its report's counters just after the end while other CPUs go on
    # switching, and records until it has read them: its figures are the
    # trace's at the end or at one of the events after it (each figure at
    # the instant it was read, so each is held against every cut-off).
    limits = [end]
    if "runs" in results:
        limits += sorted({t for ts in times.values() for t in ts if t > end})

    def upto(stamps, limit):
        return sum(1 for t in stamps if t <= limit)

    def check(what, got, stamps=None, figures=None):
        figures = figures or [upto(stamps, limit) for limit in limits]
        if got not in figures:
            shown = figures[0] if len(set(figures)) == 1 else f"one of {sorted(set(figures))}"
            fail(f"{what}: the run counted {got}, the trace shows {shown}")

    for cpu, count in cpu_switches.items():
        check(f"cpu{cpu} sched_switch events", count, [e[0] for e in switches[cpu]])

    def runtimes(limit):
        """Each pid's time between its switches in and out up to `limit`, a
        task still running then counted to the end (nothing when it came
        in after the end: the report counts a stretch under way to its end)."""
        runtime = collections.Counter()
        for events in switches.values():
            kept = [e for e in events if e[0] <= limit]
            for (ts, _, next_pid), following in zip(kept, kept[1:] + [(None, None, None)]):
                if next_pid:
                    runtime[next_pid] += following[0] - ts if following[0] is not None else max(0, end - ts)
        return runtime

    for events in switches.values():
        events.sort(key=lambda e: e[0])  # stable: same-instant switches keep their order
    by_limit = [runtimes(limit) for limit in limits]
    for index, task in enumerate(tasks):
        pid = index + 1
        if names.get(pid) != task["name"]:
            fail(f"pid {pid} is named {names.get(pid)!r}, the run's task {index} is {task['name']!r}")
        check(f"{task['name']}: runtime_ns by its switches", task["runtime_ns"],
              figures=[runtime[pid] for runtime in by_limit])
        # One definition of a wake-up (docs/report-format.md, "Overruns"): a
        # sched_waking, so a timer event reached after its expiry (the task
        # never slept) is none; each wake-up run or pending at the end is one.
        check(f"{task['name']}: sched_waking events (wakeups + pending_wakeups)",
              task["wakeups"] + task["pending"], wakings[pid])
        # Its latencies: from each sched_wakeup to its next switch-in, those
        # switched in by the end (the others are pending).
        latencies = wakeup_latencies(pid, pid_times["sched_wakeup"], switches, end)
        if len(latencies) != task["wakeups"]:
            fail(f"{task['name']}: {len(latencies)} wake-ups switched in by the trace, "
                 f"the run counted {task['wakeups']} latencies")
        if max(latencies, default=0) != task["lat_max"]:
            fail(f"{task['name']}: the largest wake-up latency is {max(latencies, default=0)} ns "
                 f"by the trace, the run's is {task['lat_max']}")

    # The run's tasks are pids 1..=len(tasks); the kernel's own tasks
    # (main, rtapp-start) follow and are not in its report.
    reported = lambda pid: 1 <= pid <= len(tasks)
    check("sched_migrate_task events", sum(t["migrations"] for t in tasks),
          [ts for ts, pid in pid_times["sched_migrate_task"] if reported(pid)])
    check("sched_wakeup_new events (started tasks)", sum(1 for t in tasks if t["started"]),
          [ts for ts, pid in pid_times["sched_wakeup_new"] if reported(pid)])
    if all(t["finished"] is not None for t in tasks):
        finished = sum(1 for t in tasks if t["finished"])
        if counts["sched_process_exit"] != finished:
            fail(f"{counts['sched_process_exit']} sched_process_exit events for {finished} finished tasks")
    # Each sched_wakeup has its sched_waking. In the simulator every waking
    # has its wakeup; the kernel stops recording while a wake-up sent to
    # another CPU may be in flight, so a task's last waking may be alone.
    for pid in set(p for _, p in pid_times["sched_waking"]) | set(p for _, p in pid_times["sched_wakeup"]):
        woken = sorted(ts for ts, p in pid_times["sched_wakeup"] if p == pid)
        waking = sorted(ts for ts, p in pid_times["sched_waking"] if p == pid)
        alone = len(waking) - len(woken)
        last_alone = alone == 1 and "runs" in results and (not woken or waking[-1] >= woken[-1])
        if alone != 0 and not last_alone:
            fail(f"pid {pid}: {len(waking)} sched_waking but {len(woken)} sched_wakeup")
        if any(w < k for w, k in zip(woken, waking)):
            fail(f"pid {pid}: a sched_wakeup before its sched_waking")

    throttled_tracks = check_groups(results, tracks, plain_tracks, counter_values, counter_times, limits)

    cpu_signals = ("util", "capacity", "uclamp_min", "uclamp_max")
    group_signals = ("throttled", "runtime_remaining", "runtime")
    for uuid, (name, parent) in tracks.items():
        values = counter_values.get(uuid, [])
        if not values:
            fail(f"counter track {name!r} has no values")
        if name.split(" ")[-1] in group_signals:
            if plain_tracks.get(parent) is None:
                fail(f"group counter {name!r} is not below a task group's track")
            continue
        if name in ("util_avg", "util_est", "load_avg"):
            if parent is None:
                fail(f"task counter {name!r} is not below a thread track")
        elif name == "overutilized":
            if not set(values) <= {0, 1}:
                fail(f"overutilized takes {sorted(set(values))}")
        elif name.startswith("pd") and name.endswith(" energy_nj"):
            domain = int(name[2:].split(" ")[0])
            if values != sorted(values):
                fail(f"{name} decreases")
            final = energy[domain]
            if values[-1] != final:
                fail(f"{name} ends on {values[-1]}, not on the run's {final} nJ")
        elif not (name.startswith("cpu") and name.split(" ")[-1] in cpu_signals):
            fail(f"unexpected counter track {name!r}")
        else:
            # A CPU's signals are recorded once more at the run's end, so its
            # lines reach the end instead of stopping at its last switch or tick.
            last = counter_times[uuid][-1]
            if last < end:
                fail(f"{name}'s last value is at {last} ns, before the run's end at {end} ns")
        bounded = name in ("util_avg", "util_est") or name.split(" ")[-1] in cpu_signals[1:]
        if not all(0 <= v and (v <= 1024 or not bounded) for v in values):
            fail(f"counter {name!r} out of range: {min(values)}..{max(values)}")
    if not tracks:
        fail("no counter tracks")

    summary = " ".join(f"{k}={counts[k]}" for k in sorted(counts))
    print(f"check_trace: ok: {fields} subset fields match Perfetto's, {len(trace.packet)} packets, {summary}, "
          f"{len(tracks)} counter tracks, {sum(len(v) for v in counter_values.values())} counter values, "
          f"{throttled_tracks} throttled tracks")


def wakeup_latencies(pid, wakeups, switches, end):
    """`pid`'s wake-up latencies by the trace: from each of its sched_wakeup
    events (the woken task queued) to its next switch-in on any CPU, those
    switched in by `end` (the report's window)."""
    ins = sorted(ts for events in switches.values() for ts, _, next_pid in events if next_pid == pid)
    latencies = []
    for woken in sorted(ts for ts, p in wakeups if p == pid):
        switched = next((ts for ts in ins if ts >= woken), None)
        if switched is not None and switched <= end:
            latencies.append(switched - woken)
    return latencies


def check_groups(results, tracks, plain_tracks, counter_values, counter_times, limits):
    """The bandwidth tracks against the results' `groups`; returns the number
    of `cpuN throttled` tracks. `limits` are the instants the figures may
    have been read at (the end, and for the kernel each event after it):
    each CPU's throttled time is held against the intervals closed by one
    of them."""
    group_uuid = {name: uuid for uuid, name in plain_tracks.items()}
    if "runs" in results:
        groups = results["runs"][0].get("groups", [])
        nr_cpus = len(results["runs"][0]["cpu_stats"])
    else:
        groups = results.get("groups", [])
        nr_cpus = len(results.get("cpus", []))
    if sorted(group_uuid) != sorted(g["path"] for g in groups):
        fail(f"task group tracks {sorted(group_uuid)}, the run limits {sorted(g['path'] for g in groups)}")
    throttled_tracks = 0
    for group in groups:
        path = group["path"]
        below = {name: uuid for uuid, (name, parent) in tracks.items() if parent == group_uuid[path]}
        limit = None
        if group["quota_us"] is not None:
            limit = (group["quota_us"] + group["burst_us"]) * 1000
        total_ns = 0
        for cpu in range(nr_cpus):
            for signal in ("throttled", "runtime_remaining"):
                if f"cpu{cpu} {signal}" not in below:
                    fail(f"{path}: no cpu{cpu} {signal} track")
            uuid = below[f"cpu{cpu} throttled"]
            throttled_tracks += 1
            values = counter_values[uuid]
            if not set(values) <= {0, 1}:
                fail(f"{path} cpu{cpu} throttled takes {sorted(set(values))}")
            intervals = []
            since = None
            for ts, value in zip(counter_times[uuid], values):
                if value == 1 and since is None:
                    since = ts
                elif value == 0 and since is not None:
                    intervals.append((since, ts))
                    since = None
            by_limit = [sum(b - a for a, b in intervals if b <= limit) for limit in limits]
            matching = [ns for ns in by_limit if ns // 1000 == group["local_throttled_usec"][cpu]]
            if not matching:
                fail(f"{path} cpu{cpu}: throttled {sorted(set(by_limit))} ns by its track "
                     f"(at the end or a later event), the run's local_throttled_usec is "
                     f"{group['local_throttled_usec'][cpu]}")
            cpu_ns = matching[0]
            total_ns += cpu_ns
            remaining = counter_values[below[f"cpu{cpu} runtime_remaining"]]
            if limit is not None and max(remaining) > limit:
                fail(f"{path} cpu{cpu}: runtime_remaining reaches {max(remaining)}, above quota+burst {limit}")
        if total_ns // 1000 != group["throttled_usec"]:
            fail(f"{path}: throttled {total_ns} ns by its tracks, the run's throttled_usec is {group['throttled_usec']}")
        if "runtime" not in below:
            fail(f"{path}: no runtime track")
        runtime = counter_values[below["runtime"]]
        if min(runtime) < 0 or (limit is not None and max(runtime) > limit):
            fail(f"{path}: runtime {min(runtime)}..{max(runtime)}, outside 0..={limit}")
    return throttled_tracks


if __name__ == "__main__":
    main()
