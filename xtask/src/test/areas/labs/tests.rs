//! The answer keys' tests: lines read, values found, wrong values refused.

use super::key::*;
use super::read::*;
use super::*;
use serde_json::Value;

#[test]
fn a_check_line_is_read() {
    let check = parse_check(
        "Q1 heavy's runtime, ms | json target/labs/lab2.json tasks[name=heavy].runtime_ns / 1e6 | 603.8 ± 4.8",
    )
    .unwrap();
    assert_eq!(check.label, "Q1 heavy's runtime, ms");
    assert_eq!(
        check.source,
        Source::Json {
            file: "target/labs/lab2.json".into(),
            path: "tasks[name=heavy].runtime_ns".into(),
            minus: None,
        }
    );
    assert_eq!(check.divisor, 1e6);
    assert_eq!(
        check.expected,
        Expected::Near {
            value: 603.8,
            tolerance: 4.8
        }
    );
    let csv = parse_check(
        "Q2 spread | csv f.csv spread vruntime where time_ns=100_000_000, task>=1 / 1e6 | 0..4",
    )
    .unwrap();
    assert_eq!(csv.divisor, 1e6);
    let Source::Csv {
        aggregate,
        column,
        filter,
        ..
    } = csv.source
    else {
        panic!("not a CSV source");
    };
    assert_eq!(
        (aggregate, column.as_str()),
        (Aggregate::Spread, "vruntime")
    );
    assert_eq!(filter.len(), 2);
    assert_eq!(filter[0].value, "100_000_000");
    assert_eq!(filter[1].relation, Relation::AtLeast);
    // A regex may hold ` | `: the label ends at the first, the
    // expectation starts after the last.
    let text = parse_check("kernel a | text out.txt `^(a|b) | ([0-9.]+)` / 10 | 1 +- 5%").unwrap();
    assert_eq!(
        text.source,
        Source::Text {
            file: "out.txt".into(),
            pattern: "^(a|b) | ([0-9.]+)".into()
        }
    );
    assert_eq!(text.divisor, 10.0);
    assert_eq!(
        text.expected,
        Expected::NearPercent {
            value: 1.0,
            percent: 5.0
        }
    );
    let difference =
        parse_check("Q2b first | json r.json switches[2].time_ns - switches[1].time_ns | 1..2")
            .unwrap();
    assert!(
        matches!(difference.source, Source::Json { minus: Some(ref m), .. } if m == "switches[1].time_ns")
    );
}

#[test]
fn malformed_checks_are_refused_naming_what_is_wrong() {
    for (line, says) in [
        ("Q1 no fields", "LABEL | SOURCE | EXPECTED"),
        ("Q1 | json f.json a.b | 3", "neither"),
        ("Q1 | json f.json a.b | 5..3", "empty"),
        ("Q1 | yaml f.yaml a | 1 ± 1", "not json"),
        ("Q1 | csv f.csv median x | 1 ± 1", "median"),
        ("Q1 | text f.txt ([0-9]+) | 1 ± 1", "backticks"),
        ("Q1 | text f.txt `([0-9]+` | 1 ± 1", "regex"),
        ("Q1 | json f.json a / 0 | 1 ± 1", "divisor of 0"),
        ("  | json f.json a | 1 ± 1", "no label"),
    ] {
        let error = parse_check(line).unwrap_err();
        assert!(error.contains(says), "{line}: {error}");
    }
    assert!(parse_key("```check\nQ1 | json f.json a | 1 ± 1\n").is_err());
}

#[test]
fn a_key_gives_its_checks_and_commands() {
    let key = parse_key(
        "# Key\n\n1. Text.\n\n```check\n# a comment\nQ1 a | json f.json a | 1 ± 0\n\nQ2 b | count f.txt `x` | 0..0\n```\n\n```sh\necho hi > f.txt\n```\n```text\nnot a check\n```\n",
    )
    .unwrap();
    assert_eq!(key.checks.len(), 2);
    assert_eq!(key.checks[1].label, "Q2 b");
    assert_eq!(key.commands, "echo hi > f.txt\n");
}

#[test]
fn json_paths_select_by_index_and_field() {
    let json: Value = serde_json::from_str(
        r#"{"tasks": [{"name": "a", "runtime_ns": 5}, {"name": "b", "runtime_ns": 7}],
            "energy": [{"residency_us": [{"mhz": 450, "us": 9}]}], "finished": true}"#,
    )
    .unwrap();
    assert_eq!(json_at(&json, "tasks[1].runtime_ns"), Ok(7.0));
    assert_eq!(json_at(&json, "tasks[name=a].runtime_ns"), Ok(5.0));
    assert_eq!(
        json_at(&json, "energy[0].residency_us[mhz=450].us"),
        Ok(9.0)
    );
    assert_eq!(json_at(&json, "finished"), Ok(1.0));
    assert!(json_at(&json, "tasks[name=c].runtime_ns").is_err());
    assert!(json_at(&json, "tasks[2]").unwrap_err().contains("index 2"));
    assert!(
        json_at(&json, "tasks")
            .unwrap_err()
            .contains("not a number")
    );
}

#[test]
fn csv_aggregates_over_the_kept_rows() {
    let csv = "time_ns,task,v\n0,a,1\n0,b,4\n10,a,2\n10,b,8\n";
    let at = |time: &str| parse_filter(&format!("time_ns={time}")).unwrap();
    assert_eq!(
        csv_aggregate(csv, Aggregate::Spread, "v", &at("10")),
        Ok(6.0)
    );
    assert_eq!(csv_aggregate(csv, Aggregate::Mean, "v", &at("0")), Ok(2.5));
    let not_a = parse_filter("task!=a").unwrap();
    assert_eq!(csv_aggregate(csv, Aggregate::Min, "v", &not_a), Ok(4.0));
    let late_a = parse_filter("task=a,time_ns>=5").unwrap();
    assert_eq!(csv_aggregate(csv, Aggregate::Value, "v", &late_a), Ok(2.0));
    assert_eq!(csv_aggregate(csv, Aggregate::Max, "v", &[]), Ok(8.0));
    assert_eq!(csv_aggregate(csv, Aggregate::Count, "v", &at("5")), Ok(0.0));
    assert!(csv_aggregate(csv, Aggregate::Value, "v", &at("0")).is_err());
    assert!(csv_aggregate(csv, Aggregate::Min, "w", &[]).is_err());
}

/// The checker on files: a right value holds, a wrong one fails naming
/// the lab, the question, the expectation and the value found; a key
/// without checks fails.
#[test]
fn the_checker_passes_right_values_and_fails_wrong_ones() {
    let dir = std::env::temp_dir().join(format!("xtask-lab-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("r.json"),
        r#"{"tasks": [{"name": "heavy", "runtime_ns": 600000000}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("t.txt"),
        "                    simulator  kernel\nheavy runtime       600.0 ms   600.0 ms\nlight runtime 1 ms 2 ms  <<\n",
    )
    .unwrap();
    let right = parse_key(
        "```check\nQ1 heavy | json r.json tasks[name=heavy].runtime_ns / 1e6 | 603.8 ± 4.8\n\
         kernel heavy | text t.txt `^heavy runtime +[0-9.]+ ms +([0-9.]+) ms` | 603.8 ± 1%\n\
         kernel marked | count t.txt `<<$` | 1..1\n```\n",
    )
    .unwrap();
    assert_eq!(evaluate("lab2-cfs", &right, &dir), Ok(3));
    let wrong = parse_key(
        "```check\nQ1 heavy | json r.json tasks[name=heavy].runtime_ns / 1e6 | 640 ± 4.8\n\
         Q2 gone | json missing.json a | 1 ± 0\n```\n",
    )
    .unwrap();
    let failures = evaluate("lab2-cfs", &wrong, &dir).unwrap_err();
    assert_eq!(failures.len(), 2);
    assert_eq!(
        failures[0],
        "lab2-cfs Q1 heavy: expected 640 ± 4.8, found 600 \
         (json r.json tasks[name=heavy].runtime_ns / 1e6)"
    );
    assert!(
        failures[1].starts_with("lab2-cfs Q2 gone: expected 1 ± 0, found nothing: missing.json")
    );
    let empty = parse_key("# A key\n\nNo checks.\n").unwrap();
    assert!(evaluate("lab9", &empty, &dir).unwrap_err()[0].contains("no check"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every key in the repository reads, and has checks.
#[test]
fn the_repositorys_keys_read() {
    let root = crate::run::board::workspace_root();
    let sheets = sheets(&root, None).unwrap();
    assert!(sheets.len() >= 5);
    for sheet in sheets {
        let name = sheet.file_stem().unwrap().to_str().unwrap();
        let path = root.join(format!("docs/labs/answers/{name}.md"));
        let key = parse_key(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!key.checks.is_empty(), "{name}");
    }
}
