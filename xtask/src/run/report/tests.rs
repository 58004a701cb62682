//! Tests of the report protocol: a sample transcript to its JSON structure,
//! byte-identical output, and an error naming the line for each malformed case.

use serde_json::{Value, json};

use super::*;

/// A hand-written transcript: two runs, defmt timestamps and levels in front
/// of some records, ordinary log lines in between.
const SAMPLE: &str = "\
0.000000 INFO  fairway: booting on 2 CPUs
report: run name=sched-pipe config=depth0-uclamp-off cpus=2 icount=1 wall_ns=5000000
0.001000 report: cost cpu=0 op=enqueue_task count=4 min=100 p50=120 p99=300 max=300 sum=640 overhead=22
report: hist cpu=0 op=enqueue_task buckets=6:3,8:1
report: cost cpu=1 op=enqueue_task count=2 min=90 p50=90 p99=130 max=130 sum=220 overhead=22
report: hist cpu=1 op=enqueue_task buckets=6:1,7:1
INFO  report: cost cpu=0 op=context_switch count=3 min=400 p50=410 p99=420 max=420 sum=1230 overhead=22
report: task id=1 name=ping cpu=0 runtime_ns=2000000 wait_ns=100000 wakeups=3 lat_p50_ns=2000 lat_p99_ns=5000 lat_max_ns=5000 missed_periods=0 pending_wakeups=0 migrations=1 switches=4
report: hist task=1 op=wakeup_latency buckets=10:2,12:1
report: task id=2 name=pong cpu=1 runtime_ns=1500000 wait_ns=0 wakeups=0 lat_p50_ns=0 lat_p99_ns=0 lat_max_ns=0 missed_periods=2 pending_wakeups=0 migrations=0 switches=1
report: cpu id=0 busy_ns=4000000 idle_ns=1000000 switches=7
report: cpu id=1 busy_ns=2500000 idle_ns=2500000 switches=3
report: group path=/a quota_us=25000 period_us=100000 burst_us=0 nr_periods=10 nr_throttled=10 throttled_usec=750000 nr_bursts=0 burst_usec=0 local_throttled_usec=750000,0
report: group path=/a/b quota_us=max period_us=100000 burst_us=20000 nr_periods=4 nr_throttled=0 throttled_usec=0 nr_bursts=1 burst_usec=1500 local_throttled_usec=0,0
report: metric name=ops_per_second value=200000
report: end
0.006000 INFO  second configuration
report: run name=sched-pipe config=depth2-uclamp-on cpus=1 icount=1 wall_ns=6000000
report: cost cpu=0 op=enqueue_task count=1 min=500 p50=500 p99=500 max=500 sum=500 overhead=22
report: end
";

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn json_of(text: &str) -> Value {
    let report = parse_report(&lines(text)).expect("sample parses");
    serde_json::from_str(&report.to_json()).expect("to_json gives valid JSON")
}

#[test]
fn sample_transcript_gives_the_documented_json() {
    let document = json_of(SAMPLE);
    assert_eq!(document["format"], json!("fairway-report"));
    assert_eq!(document["version"], json!(1));
    let runs = document["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let first = &runs[0];
    assert_eq!(first["name"], json!("sched-pipe"));
    assert_eq!(first["config"], json!("depth0-uclamp-off"));
    assert_eq!(first["cpus"], json!(2));
    assert_eq!(first["icount"], json!(true));
    assert_eq!(first["counter_unit"], json!("instructions"));
    assert_eq!(first["wall_ns"], json!(5_000_000));
    // Bucket ranges are [2^k, 2^(k+1) - 1]: 6 -> [64, 127], 8 -> [256, 511].
    assert_eq!(
        first["costs"][0],
        json!({
            "cpu": 0, "op": "enqueue_task", "count": 4, "min": 100, "p50": 120, "p99": 300,
            "max": 300, "sum": 640, "overhead": 22,
            "histogram": [
                {"bucket": 6, "low": 64, "high": 127, "count": 3},
                {"bucket": 8, "low": 256, "high": 511, "count": 1}
            ]
        })
    );
    assert_eq!(first["costs"][2]["histogram"], Value::Null);
    // Two CPUs: counts, sums add; min and max over CPUs; no exact quantile;
    // the histograms merge bucket by bucket (6: 3 + 1, 7: 1, 8: 1).
    assert_eq!(
        first["cost_by_op"][0],
        json!({
            "op": "enqueue_task", "cpus": 2, "count": 6, "min": 90, "p50": null, "p99": null,
            "max": 300, "sum": 860,
            "histogram": [
                {"bucket": 6, "low": 64, "high": 127, "count": 4},
                {"bucket": 7, "low": 128, "high": 255, "count": 1},
                {"bucket": 8, "low": 256, "high": 511, "count": 1}
            ]
        })
    );
    // One CPU recorded context_switch: its quantiles are exact for all CPUs.
    assert_eq!(first["cost_by_op"][1]["p50"], json!(410));
    assert_eq!(first["cost_by_op"][1]["histogram"], Value::Null);
    assert_eq!(
        first["tasks"][0],
        json!({
            "id": 1, "name": "ping", "cpu": 0, "runtime_ns": 2_000_000, "wait_ns": 100_000,
            "wakeups": 3, "lat_p50_ns": 2000, "lat_p99_ns": 5000, "lat_max_ns": 5000,
            "missed_periods": 0, "pending_wakeups": 0, "migrations": 1, "switches": 4,
            "latency_histogram": [
                {"bucket": 10, "low": 1024, "high": 2047, "count": 2},
                {"bucket": 12, "low": 4096, "high": 8191, "count": 1}
            ]
        })
    );
    assert_eq!(first["tasks"][1]["missed_periods"], json!(2));
    assert_eq!(
        first["cpu_stats"],
        json!([
            {"id": 0, "busy_ns": 4_000_000, "idle_ns": 1_000_000, "switches": 7},
            {"id": 1, "busy_ns": 2_500_000, "idle_ns": 2_500_000, "switches": 3}
        ])
    );
    assert_eq!(
        first["metrics"],
        json!([{"name": "ops_per_second", "value": 200_000}])
    );
    // `max` is null; the per-CPU list keeps CPU order.
    assert_eq!(
        first["groups"],
        json!([
            {
                "path": "/a", "quota_us": 25_000, "period_us": 100_000, "burst_us": 0,
                "nr_periods": 10, "nr_throttled": 10, "throttled_usec": 750_000,
                "nr_bursts": 0, "burst_usec": 0, "local_throttled_usec": [750_000, 0]
            },
            {
                "path": "/a/b", "quota_us": null, "period_us": 100_000, "burst_us": 20_000,
                "nr_periods": 4, "nr_throttled": 0, "throttled_usec": 0,
                "nr_bursts": 1, "burst_usec": 1500, "local_throttled_usec": [0, 0]
            }
        ])
    );
    assert_eq!(runs[1]["config"], json!("depth2-uclamp-on"));
    assert_eq!(runs[1]["groups"], json!([]));
    assert_eq!(runs[1]["cost_by_op"][0]["p99"], json!(500));
}

#[test]
fn json_keys_keep_the_documented_order() {
    let text = parse_report(&lines(SAMPLE)).unwrap().to_json();
    let order = [
        "\"format\"",
        "\"version\"",
        "\"runs\"",
        "\"name\"",
        "\"config\"",
        "\"cpus\"",
        "\"icount\"",
        "\"counter_unit\"",
        "\"wall_ns\"",
        "\"costs\"",
        "\"cost_by_op\"",
        "\"cpu_stats\"",
        "\"tasks\"",
        "\"metrics\"",
        "\"groups\"",
        "\"path\"",
        "\"quota_us\"",
        "\"period_us\"",
        "\"burst_us\"",
        "\"nr_periods\"",
        "\"nr_throttled\"",
        "\"throttled_usec\"",
        "\"nr_bursts\"",
        "\"burst_usec\"",
        "\"local_throttled_usec\"",
    ];
    let positions: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(positions.windows(2).all(|p| p[0] < p[1]), "{positions:?}");
    assert!(text.ends_with("}\n"));
}

#[test]
fn same_records_give_byte_identical_json() {
    let first = parse_report(&lines(SAMPLE)).unwrap().to_json();
    let second = parse_report(&lines(SAMPLE)).unwrap().to_json();
    assert_eq!(first, second);
    // Another boot with other timestamps, levels and log lines, same records.
    let other: String = SAMPLE
        .lines()
        .map(|line| match line.find("report: ") {
            Some(at) => format!("9.999999 WARN  {}\nnoise line\n", &line[at..]),
            None => "0.5 INFO  something else\n".to_string(),
        })
        .collect();
    assert_eq!(parse_report(&lines(&other)).unwrap().to_json(), first);
}

#[test]
fn lines_without_the_marker_are_log_lines() {
    let text = "xreport: run name=a\nthe report: is a word here? no: needs key=value\n";
    // The first has no space before the marker: ignored. The second has one:
    // it is a record, and `is` is not a kind.
    let error = parse_report(&lines(text)).unwrap_err();
    assert!(
        error.starts_with("line 2: unknown record kind 'is'"),
        "{error}"
    );
    assert_eq!(parse_report(&lines("boot\nidle\n")), Ok(Report::default()));
}

/// Each malformed case, the line number, and a phrase the error must contain.
#[test]
fn malformed_lines_give_errors_naming_the_line() {
    let run = "report: run name=r config=c cpus=2 icount=0 wall_ns=1";
    let cost =
        "report: cost cpu=0 op=enqueue_task count=2 min=1 p50=1 p99=2 max=2 sum=3 overhead=0";
    let group = "report: group path=/a quota_us=1 period_us=2 burst_us=0 nr_periods=2 \
                 nr_throttled=1 throttled_usec=5 nr_bursts=0 burst_usec=0";
    let mut cases = malformed_record_cases(run);
    cases.extend(malformed_cost_cases(run, cost));
    cases.extend(malformed_group_cases(run, group));
    for (text, line, phrase) in cases {
        let result = parse_report(&lines(&text));
        if line == 0 {
            // `report:` without the space is not a record.
            assert_eq!(result, Ok(Report::default()), "{text}");
            continue;
        }
        let error = result.expect_err(&text);
        let quoted = text.lines().nth(line - 1).unwrap();
        assert!(error.starts_with(&format!("line {line}: ")), "{error}");
        assert!(error.contains(phrase), "{error} should say {phrase}");
        assert!(error.ends_with(quoted), "{error} should quote {quoted}");
    }
    let cut = parse_report(&lines(
        "report: run name=r config=c cpus=1 icount=0 wall_ns=1",
    ));
    assert!(cut.unwrap_err().contains("cut short"));
}

/// Malformed cases of the grammar (kinds, keys, values, markers) and of the
/// `run`, `cpu` and `end` records: the transcript, the line the error names
/// (0: no record at all), and a phrase it must contain.
fn malformed_record_cases(run: &str) -> Vec<(String, usize, &'static str)> {
    vec![
        (
            format!("{run}\nreport: frob x=1"),
            2,
            "unknown record kind 'frob'",
        ),
        ("report: cost cpu=0".into(), 1, "outside a run"),
        (
            format!("{run}\nreport: cpu id=0 busy_ns=1 idle_ns=1"),
            2,
            "missing key 'switches'",
        ),
        (
            format!("{run}\nreport: cpu id=0 busy_ns=1 idle_ns=1 switches=1 colour=red"),
            2,
            "'cpu' has no key 'colour'",
        ),
        (
            format!("{run}\nreport: cpu id=0 id=0 busy_ns=1 idle_ns=1 switches=1"),
            2,
            "key 'id' given twice",
        ),
        (
            format!("{run}\nreport: cpu id=0 busy_ns=-1 idle_ns=1 switches=1"),
            2,
            "busy_ns=-1: not a decimal u64",
        ),
        (
            format!("{run}\nreport: cpu id=0 busy_ns=18446744073709551616 idle_ns=1 switches=1"),
            2,
            "not a decimal u64",
        ),
        (
            format!("{run}\nreport: cpu id=0 busy_ns 1"),
            2,
            "'busy_ns' is not key=value",
        ),
        (
            format!("{run}\nreport: cpu id=0 busy_ns= idle_ns=1 switches=1"),
            2,
            "empty value",
        ),
        (
            format!("{run}\nreport: cpu id=2 busy_ns=1 idle_ns=1 switches=1"),
            2,
            "id=2: the run has 2 CPUs",
        ),
        (
            "report: run name=r config=c cpus=2 icount=yes wall_ns=1".into(),
            1,
            "icount=yes: must be 0 or 1",
        ),
        (
            "report: run name=r config=c cpus=2 icount=1 wall_ns=1 Key=1".into(),
            1,
            "'Key' is not a key",
        ),
        (
            "report: run name=r\"q config=c cpus=2 icount=1 wall_ns=1".into(),
            1,
            "a name is",
        ),
        (format!("{run}\n{run}"), 2, "has no 'end' line"),
        (
            format!("{run}\nreport: end extra=1"),
            2,
            "'end' has no key 'extra'",
        ),
        ("report:".into(), 0, ""),
        ("report: ".into(), 1, "without a record kind"),
    ]
}

/// Malformed `cost` and `hist` records, as [`malformed_record_cases`].
fn malformed_cost_cases(run: &str, cost: &str) -> Vec<(String, usize, &'static str)> {
    vec![
        (
            format!(
                "{run}\nreport: cost cpu=0 op=x count=2 min=5 p50=4 p99=6 max=6 sum=9 overhead=0"
            ),
            2,
            "min=5 is above p50=4",
        ),
        (
            format!("{run}\n{cost}\n{cost}"),
            3,
            "given twice on that CPU",
        ),
        (
            format!("{run}\nreport: hist cpu=0 op=enqueue_task buckets=1:2"),
            2,
            "no cost line before it",
        ),
        (
            format!("{run}\n{cost}\nreport: hist cpu=0 op=enqueue_task buckets=0:1"),
            3,
            "buckets add up to 1, the cost count is 2",
        ),
        (
            format!("{run}\n{cost}\nreport: hist cpu=0 op=enqueue_task buckets=64:2"),
            3,
            "index 64 is not below 64",
        ),
        (
            format!("{run}\n{cost}\nreport: hist cpu=0 op=enqueue_task buckets=1:1,1:1"),
            3,
            "not above the one before",
        ),
        (
            format!("{run}\n{cost}\nreport: hist cpu=0 op=enqueue_task buckets=1-2"),
            3,
            "'1-2' is not index:count",
        ),
        (
            format!("{run}\n{cost}\nreport: hist op=enqueue_task buckets=1:2"),
            3,
            "exactly one of cpu= and task=",
        ),
        (
            format!("{run}\nreport: hist task=1 op=wakeup_latency buckets=-"),
            2,
            "no task line before it",
        ),
    ]
}

/// Malformed `group` records, as [`malformed_record_cases`].
fn malformed_group_cases(run: &str, group: &str) -> Vec<(String, usize, &'static str)> {
    vec![
        (
            format!("{run}\n{group} local_throttled_usec=0,0")
                .replace("quota_us=1", "quota_us=abc"),
            2,
            "quota_us=abc: not a decimal u64 or max",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0").replace(" nr_periods=2", ""),
            2,
            "missing key 'nr_periods'",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,x"),
            2,
            "local_throttled_usec: 'x' is not a decimal u64",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,,0"),
            2,
            "local_throttled_usec: '' is not a decimal u64",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,-1"),
            2,
            "'-1' is not a decimal u64",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0,0"),
            2,
            "local_throttled_usec: 3 entries, the run has 2 CPUs",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=-"),
            2,
            "local_throttled_usec: 0 entries, the run has 2 CPUs",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0 colour=red"),
            2,
            "'group' has no key 'colour'",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0 burst_us=1"),
            2,
            "key 'burst_us' given twice",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0")
                .replace("nr_throttled=1", "nr_throttled=3"),
            2,
            "nr_throttled=3 is above nr_periods=2",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0").replace("path=/a", "path=a"),
            2,
            "path=a: a group path starts with '/'",
        ),
        (
            format!("{run}\n{group} local_throttled_usec=0,0\n{group} local_throttled_usec=1,1"),
            3,
            "group path=/a given twice",
        ),
        (
            format!("{group} local_throttled_usec=0"),
            1,
            "'group' outside a run",
        ),
    ]
}

#[test]
fn bucket_ranges_are_powers_of_two() {
    assert_eq!(Histogram::range(0), (0, 1));
    assert_eq!(Histogram::range(1), (2, 3));
    assert_eq!(Histogram::range(10), (1024, 2047));
    assert_eq!(Histogram::range(63), (1 << 63, u64::MAX));
}

#[test]
fn all_cpu_record_supplies_exact_quantiles() {
    let text = "\
report: run name=r config=c cpus=2 icount=0 wall_ns=1
report: cost cpu=0 op=pick_next_task count=1 min=10 p50=10 p99=10 max=10 sum=10 overhead=3
report: cost cpu=1 op=pick_next_task count=1 min=30 p50=30 p99=30 max=30 sum=30 overhead=3
report: cost cpu=all op=pick_next_task count=2 min=10 p50=10 p99=30 max=30 sum=40 overhead=3
report: end";
    let report = parse_report(&lines(text)).unwrap();
    let by_op = report.runs[0].cost_by_op();
    assert_eq!(by_op.len(), 1);
    assert_eq!((by_op[0].cpus, by_op[0].count), (2, 2));
    assert_eq!((by_op[0].p50, by_op[0].p99), (Some(10), Some(30)));
    let document: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(document["runs"][0]["costs"][2]["cpu"], json!("all"));
    assert_eq!(document["runs"][0]["counter_unit"], json!("cycles"));
}

#[test]
fn summary_has_aligned_tables_and_scaled_bars() {
    let summary = parse_report(&lines(SAMPLE)).unwrap().summary();
    // Every row of the per-task table ends in a right-aligned number, so the
    // rows are as long as each other.
    let header = summary
        .lines()
        .position(|l| l.contains("runtime_ns"))
        .unwrap();
    let rows: Vec<&str> = summary.lines().skip(header + 1).take(2).collect();
    assert!(
        rows[0].contains("ping") && rows[1].contains("pong"),
        "{summary}"
    );
    assert_eq!(rows[0].len(), rows[1].len(), "{summary}");
    // The merged enqueue_task histogram has 4, 1, 1 in buckets 6, 7, 8: the
    // fullest bar is 40 wide, 1/4 of it is 10.
    let bar = |range: &str| {
        summary
            .lines()
            .find(|l| l.trim_start().starts_with(range))
            .map(|l| l.matches('#').count())
    };
    assert_eq!(bar("[64, 127]"), Some(40), "{summary}");
    assert_eq!(bar("[128, 255]"), Some(10), "{summary}");
    // The group table: `cpu.max` as cgroup v2 writes it; only the first run
    // has groups.
    assert_eq!(summary.matches("groups (cpu.max, cpu.stat)").count(), 1);
    let groups = summary
        .lines()
        .position(|l| l.contains("nr_throttled"))
        .unwrap();
    let header: Vec<&str> = summary
        .lines()
        .nth(groups)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "path",
            "cpu.max",
            "nr_periods",
            "nr_throttled",
            "throttled_usec",
            "nr_bursts",
            "burst_usec"
        ]
    );
    let rows: Vec<&str> = summary.lines().skip(groups + 1).take(2).collect();
    let cells = |row: &str| row.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(cells(rows[0]), "/a 25000 100000 10 10 750000 0 0");
    assert_eq!(cells(rows[1]), "/a/b max 100000 4 0 0 1 1500");
    // The cpu.max column is left-aligned, the figures right-aligned.
    assert!(rows[0].contains("  /a    25000 100000  "), "{summary}");
    assert!(rows[1].contains("  /a/b  max 100000    "), "{summary}");
    assert_eq!(rows[0].len(), rows[1].len(), "{summary}");
    assert!(summary.contains("cost by configuration"));
    assert!(summary.contains("depth2-uclamp-on"));
    assert!(summary.contains("instructions"));
    assert_eq!(
        Report::default().summary(),
        "no report records in the transcript\n"
    );
}

/// The `clock` record (issue 17): the time base and the cost counter reach
/// the JSON; a section without one has `"clock": null`; two are refused.
#[test]
fn the_clock_record_names_the_time_base_and_the_cost_counter() {
    let text = "\
report: run name=r config=c cpus=1 icount=0 wall_ns=1
report: clock timer=cntpct timer_hz=24000000 cycle_counter=pmccntr
report: end
report: run name=old config=c cpus=1 icount=0 wall_ns=1
report: end";
    let report = parse_report(&lines(text)).unwrap();
    let document: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(
        document["runs"][0]["clock"],
        json!({"timer": "cntpct", "timer_hz": 24_000_000, "cycle_counter": "pmccntr"})
    );
    assert_eq!(document["runs"][1]["clock"], Value::Null);
    let twice = parse_report(&lines(
        "report: run name=r config=c cpus=1 icount=0 wall_ns=1\n\
         report: clock timer=cntpct timer_hz=1 cycle_counter=none\n\
         report: clock timer=cntpct timer_hz=1 cycle_counter=none\n\
         report: end",
    ));
    assert!(twice.unwrap_err().contains("clock given twice"));
    let missing = parse_report(&lines(
        "report: run name=r config=c cpus=1 icount=0 wall_ns=1\n\
         report: clock timer=cntpct cycle_counter=none\n\
         report: end",
    ));
    assert!(missing.unwrap_err().contains("timer_hz"));
}
