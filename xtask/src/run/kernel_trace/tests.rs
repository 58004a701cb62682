//! The kernel trace reader's tests: records merged, explain records
//! decoded, a full buffer refused.

use super::*;
use fairway_trace::explain::{
    DomainCpuView, EnergyView, PlacementView, PolicyCandidate, RrCandidate,
};

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

#[test]
fn records_merge_by_time_and_tasks_follow_the_report() {
    // CPU 1's buffer is printed after CPU 0's but holds the earlier
    // records; task 7 is the report's first task, 5 a kernel task.
    let trace = from_lines(&lines(
        "0.1 trace-record: 3 0 500 5 120 0\n\
         0.1 trace-record: 0 0 600 65535 5 0\n\
         trace-cpu: 0 records=2 dropped=0\n\
         trace-record: 3 1 100 7 100 1\n\
         trace-record: 0 1 200 65535 7 0\n\
         trace-record: 8 1 200 7 0 321\n\
         trace-cpu: 1 records=3 dropped=0\n\
         trace-task: 5 main\n\
         trace-task: 7 rt\n\
         trace-end: 1000\n\
         report: task id=7 name=rt cpu=1",
    ))
    .unwrap()
    .unwrap();
    assert_eq!(trace.nr_cpus, 2);
    let names: Vec<_> = trace
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.prio))
        .collect();
    assert_eq!(names, [("rt", 100), ("main", 120)]);
    let times: Vec<_> = trace.records.iter().map(|r| (r.time_ns, r.cpu)).collect();
    assert_eq!(times, [(100, 1), (200, 1), (500, 0), (600, 0)]);
    assert_eq!(
        trace.records[1].event,
        Event::Switch {
            prev: None,
            prev_state: PrevState::Runnable,
            next: Some(0)
        }
    );
    assert_eq!(
        trace.counters[0].track,
        CounterTrack::Task(0, TaskSignal::UtilAvg)
    );
    assert_eq!(trace.counters[0].value, 321);
}

#[test]
fn explain_records_decode_into_the_decisions_they_pack() {
    let k = |kind: Kind| kind as u8;
    // CPU 0 at 100 ns: a pick of task 7 among 7 (running, eligible,
    // protected) and 5 (lag -3, not eligible); CPU 1 at 50 ns: task 5's wake-up from
    // CPU 1 to 0 after one energy estimate; CPU 1 at 70 ns: domain 0 to
    // 950 MHz with CPU 0's numbers.
    let text = format!(
        "trace-record: {} 0 100 7 2 1\n\
         trace-record: {} 0 100 7 7 1000\n\
         trace-record: {} 0 100 7 0 1500\n\
         trace-record: {} 0 100 7 0 0\n\
         trace-record: {} 0 100 5 0 1003\n\
         trace-record: {} 0 100 5 0 1200\n\
         trace-record: {} 0 100 5 0 {}\n\
         trace-cpu: 0 records=7 dropped=0\n\
         trace-record: {} 1 40 5 0 191\n\
         trace-record: {} 1 45 0 65535 2025423\n\
         trace-record: {} 1 45 0 65535 {}\n\
         trace-record: {} 1 50 5 1 0\n\
         trace-record: {} 1 50 0 {} {}\n\
         trace-record: {} 1 70 0 1 950000\n\
         trace-record: {} 1 70 0 0 {}\n\
         trace-cpu: 1 records=7 dropped=0\n\
         trace-task: 5 b\n\
         trace-task: 7 a\n\
         trace-end: 200\n\
         report: task id=7 name=a cpu=0",
        k(Kind::ExplainPick),
        k(Kind::ExplainCandidate),
        k(Kind::ExplainDeadline),
        k(Kind::ExplainLag),
        k(Kind::ExplainCandidate),
        k(Kind::ExplainDeadline),
        k(Kind::ExplainLag),
        (-3i64) as u64,
        k(Kind::ExplainTaskUtil),
        k(Kind::ExplainEnergy),
        k(Kind::ExplainEnergyUtil),
        383u64 << 48 | 306 << 24 | 719,
        k(Kind::ExplainWake),
        k(Kind::ExplainPlacement),
        0x8000 | 2,
        383u64 << 32 | 300,
        k(Kind::ExplainFrequency),
        k(Kind::ExplainDomainCpu),
        383u64 << 48 | 120 << 24 | 130,
    );
    let explained = explained(&lines(&text)).unwrap().unwrap();
    assert_eq!(explained.names, ["a", "b"]);
    let [wake, frequency, pick] = &explained.decisions[..] else {
        panic!("{:?}", explained.decisions);
    };
    assert_eq!(
        *wake,
        Decision::Wake {
            time_ns: 50,
            task: 1,
            previous: 1,
            target: 0,
            cpus: vec![PlacementView {
                cpu: 0,
                capacity: 383,
                util: 300,
                nr_running: 2,
                idle: true
            }],
            energy: Some((
                191,
                vec![EnergyView {
                    domain: 0,
                    dst: None,
                    max_util: 306,
                    sum_util: 719,
                    cpu_cap: 383,
                    energy: 2025423
                }]
            )),
        }
    );
    assert_eq!(
        *frequency,
        Decision::Frequency {
            time_ns: 70,
            domain: 0,
            khz: 950000,
            cpus: vec![DomainCpuView {
                cpu: 0,
                capacity_orig: 383,
                util_avg: 120,
                util_est: 130
            }],
        }
    );
    let Decision::Pick {
        cpu: 0,
        eevdf: true,
        candidates,
        chosen: Some(0),
        ..
    } = pick
    else {
        panic!("{pick:?}");
    };
    assert_eq!(candidates[0].protected, Some(true));
    assert!(candidates[0].eligible);
    assert_eq!((candidates[1].task(), candidates[1].lag), (Some(1), -3));
    assert_eq!(
        (candidates[1].protected, candidates[1].eligible),
        (None, false)
    );
    let printed = explained.lines();
    assert!(printed.iter().any(|l| l.contains("pd0 without the task")));
    assert!(printed.iter().any(|l| l.contains("chose a")));
}

#[test]
fn round_robin_pick_records_decode_in_fifo_order() {
    let k = |kind: Kind| kind as u8;
    // CPU 0 at 100 ns: a round-robin pick of task 5 (the head) among 5
    // and 7, which was running and ran 4,000,000 ns of a 4,000,000 ns
    // slice.
    let text = format!(
        "trace-record: {} 0 100 5 2 4000000\n\
         trace-record: {} 0 100 5 0 0\n\
         trace-record: {} 0 100 7 1 4000000\n\
         trace-cpu: 0 records=3 dropped=0\n\
         trace-task: 5 b\n\
         trace-task: 7 a\n\
         trace-end: 200\n\
         report: task id=7 name=a cpu=0",
        k(Kind::ExplainRrPick),
        k(Kind::ExplainRrCandidate),
        k(Kind::ExplainRrCandidate),
    );
    let explained = explained(&lines(&text)).unwrap().unwrap();
    assert_eq!(explained.names, ["a", "b"]);
    assert_eq!(
        explained.decisions,
        [Decision::RrPick {
            time_ns: 100,
            cpu: 0,
            slice: 4_000_000,
            candidates: vec![
                RrCandidate { task: 1, ran: None },
                RrCandidate {
                    task: 0,
                    ran: Some(4_000_000)
                },
            ],
            chosen: Some(1),
        }]
    );
    let printed = explained.lines();
    assert!(printed[1].contains(" 1 b ") && printed[1].ends_with("head of the FIFO"));
    assert!(printed[2].contains(" 2 a ") && printed[2].ends_with("rotated to the back"));
    assert!(printed[3].starts_with("explain:   chose b:"));
}

#[test]
fn policy_pick_records_decode_with_their_labels() {
    let k = |kind: Kind| kind as u8;
    let stride = fairway_sched::policies::PolicyId::find("stride").unwrap();
    // The label's bytes, the first in the lowest byte (contract::trace).
    let word = |text: &[u8]| {
        let mut bytes = [0u8; 8];
        bytes[..text.len()].copy_from_slice(text);
        u64::from_le_bytes(bytes)
    };
    // CPU 1 at 300 ns: stride chose task 7 (pass 10) over task 5 (pass
    // 12, a 12-byte label in two records) and task 6 (no number, no label).
    let text = format!(
        "trace-record: {pick} 1 300 7 3 {index}\n\
         trace-record: {cand} 1 300 7 {pass} 10\n\
         trace-record: {label} 1 300 7 0 {w_pass}\n\
         trace-record: {cand} 1 300 5 {long} 12\n\
         trace-record: {label} 1 300 5 0 {w_long0}\n\
         trace-record: {label} 1 300 5 1 {w_long1}\n\
         trace-record: {cand} 1 300 6 0 0\n\
         trace-cpu: 1 records=7 dropped=0\n\
         trace-task: 5 a\n\
         trace-task: 6 c\n\
         trace-task: 7 b\n\
         trace-end: 400\n\
         report: task id=5 name=a cpu=1",
        pick = k(Kind::ExplainPolicyPick),
        cand = k(Kind::ExplainPolicyCandidate),
        label = k(Kind::ExplainPolicyLabel),
        index = stride.index(),
        pass = 1 | 4 << 8,
        long = 1 | 12 << 8,
        w_pass = word(b"pass"),
        w_long0 = word(b"pass at "),
        w_long1 = word(b"pick"),
    );
    let explained = explained(&lines(&text)).unwrap().unwrap();
    let (a, b, c) = (
        explained.names.iter().position(|n| n == "a").unwrap(),
        explained.names.iter().position(|n| n == "b").unwrap(),
        explained.names.iter().position(|n| n == "c").unwrap(),
    );
    let candidate = |task, label: &str, value| PolicyCandidate {
        task,
        label: label.to_string(),
        value,
    };
    assert_eq!(
        explained.decisions,
        [Decision::PolicyPick {
            time_ns: 300,
            cpu: 1,
            policy: "stride",
            summary: stride.registered().summary,
            candidates: vec![
                candidate(b, "pass", Some(10)),
                candidate(a, "pass at pick", Some(12)),
                candidate(c, "", None),
            ],
            chosen: Some(b),
        }]
    );
    let printed = explained.lines();
    assert!(printed[0].contains("cpu1 pick (stride: ") && printed[0].ends_with("3 candidates:"));
    assert!(printed[1].contains(" 1 b ") && printed[1].ends_with("pass 10  chosen"));
    assert!(printed[2].contains(" 2 a ") && printed[2].ends_with("pass at pick 12"));
    assert_eq!(printed[4], "explain:   chose b");
}

#[test]
fn a_policy_pick_of_an_unknown_policy_is_malformed() {
    let text = format!(
        "trace-record: {} 0 100 5 0 99\n\
         trace-cpu: 0 records=1 dropped=0\n\
         trace-task: 5 a\n\
         trace-end: 200",
        Kind::ExplainPolicyPick as u8
    );
    let error = explained(&lines(&text)).err().unwrap();
    assert!(error.contains("malformed"), "{error}");
}

#[test]
fn a_full_buffer_is_an_error_and_no_records_no_trace() {
    let full = from_lines(&lines("trace-cpu: 2 records=10 dropped=3\ntrace-end: 5"));
    assert!(
        full.unwrap_err()
            .contains("cpu2's trace buffer filled up: 3 records dropped")
    );
    assert_eq!(
        from_lines(&lines("report: task id=1 name=a")).unwrap(),
        None
    );
}
