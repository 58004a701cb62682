//! The rt-app JSON parser (facts §8.3, rt-app `doc/tutorial.txt`) into the portable
//! [`Scenario`] model. Every error names the JSON path of the offending field.

use fairway_sched::scenario::{
    Attributes, Calibration, ErrorKind, Event, Global, NamedEvent, Phase, PolicyName, Scenario,
    ScenarioError, TaskGroup, TaskSpec, TimerMode,
};
use serde_json::{Map, Value};

/// Parses rt-app JSON text, then validates it for `nr_cpus` CPUs.
pub fn parse_and_validate(text: &str, nr_cpus: usize) -> Result<Scenario, ScenarioError> {
    let scenario = parse(text)?;
    scenario.validate(nr_cpus)?;
    Ok(scenario)
}

/// Parses rt-app JSON text into the model, without range checks (see [`Scenario::validate`]).
pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        ScenarioError::new(
            "",
            ErrorKind::Syntax {
                message: e.to_string(),
            },
        )
    })?;
    let root = object(&root, "")?;
    let mut global = Global::default();
    let mut tasks = Vec::new();
    for (key, value) in root {
        match key.as_str() {
            "global" => global = parse_global(value)?,
            "tasks" => {
                for (name, task) in object(value, "tasks")? {
                    tasks.push(parse_task(name, task)?);
                }
            }
            // Kept by rt-app for backward compatibility; resources are created on use.
            "resources" => {}
            _ => return Err(unknown(key)),
        }
    }
    Ok(Scenario { global, tasks })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn unknown(path: &str) -> ScenarioError {
    ScenarioError::new(path, ErrorKind::UnknownEvent)
}

fn wrong_type(path: &str, expected: &'static str, value: &Value) -> ScenarioError {
    ScenarioError::new(
        path,
        ErrorKind::WrongType {
            expected,
            found: value.to_string(),
        },
    )
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ScenarioError> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(path, "an object", value))
}

fn integer(value: &Value, path: &str) -> Result<i64, ScenarioError> {
    value
        .as_i64()
        .ok_or_else(|| wrong_type(path, "an integer", value))
}

fn string<'a>(value: &'a Value, path: &str) -> Result<&'a str, ScenarioError> {
    value
        .as_str()
        .ok_or_else(|| wrong_type(path, "a string", value))
}

fn integers(value: &Value, path: &str) -> Result<Vec<i64>, ScenarioError> {
    let array = value
        .as_array()
        .ok_or_else(|| wrong_type(path, "an array of integers", value))?;
    array
        .iter()
        .enumerate()
        .map(|(i, v)| integer(v, &join(path, &i.to_string())))
        .collect()
}

fn policy(value: &Value, path: &str) -> Result<PolicyName, ScenarioError> {
    let name = string(value, path)?;
    PolicyName::from_rt_app(name)
        .ok_or_else(|| ScenarioError::new(path, ErrorKind::UnknownPolicy { name: name.into() }))
}

fn parse_global(value: &Value) -> Result<Global, ScenarioError> {
    let mut global = Global::default();
    for (key, value) in object(value, "global")? {
        let path = join("global", key);
        match key.as_str() {
            "duration" => global.duration_s = integer(value, &path)?,
            "calibration" => {
                global.calibration = match value {
                    Value::String(s) => match s.strip_prefix("CPU").map(str::parse::<i64>) {
                        Some(Ok(cpu)) => Calibration::Cpu(cpu),
                        _ => return Err(wrong_type(&path, "\"CPUn\" or an integer", value)),
                    },
                    _ => Calibration::NsPerLoop(integer(value, &path)?),
                }
            }
            "default_policy" => global.default_policy = policy(value, &path)?,
            "capacities" => global.capacities = integers(value, &path)?,
            "frequency_scales" => global.frequency_scales = integers(value, &path)?,
            "taskgroups" => {
                for (group_path, group) in object(value, &path)? {
                    let here = join(&path, group_path);
                    let mut shares = fairway_sched::scenario::DEFAULT_SHARES;
                    for (k, v) in object(group, &here)? {
                        match k.as_str() {
                            "shares" => shares = integer(v, &join(&here, k))?,
                            _ => return Err(unknown(&join(&here, k))),
                        }
                    }
                    global.task_groups.push(TaskGroup {
                        path: group_path.clone(),
                        shares,
                    });
                }
            }
            // Host-side options of rt-app that do not change the schedule.
            "pi_enabled" | "lock_pages" | "logdir" | "log_basename" | "log_size" | "ftrace"
            | "gnuplot" | "io_device" | "mem_buffer_size" | "cumulative_slack" => {}
            _ => return Err(unknown(&path)),
        }
    }
    Ok(global)
}

/// Sets a scheduling attribute if `key` names one; `Ok(false)` if it does not.
fn attribute(
    attributes: &mut Attributes,
    key: &str,
    value: &Value,
    path: &str,
) -> Result<bool, ScenarioError> {
    match key {
        "policy" => attributes.policy = Some(policy(value, path)?),
        "priority" => attributes.priority = Some(integer(value, path)?),
        "cpus" => attributes.cpus = Some(integers(value, path)?),
        "util_min" => attributes.util_min = Some(integer(value, path)?),
        "util_max" => attributes.util_max = Some(integer(value, path)?),
        "taskgroup" => attributes.taskgroup = Some(string(value, path)?.to_string()),
        // NUMA binding and SCHED_DEADLINE parameters have no effect on this model.
        "membind_nodes" | "dl-runtime" | "dl-period" | "dl-deadline" => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// The event for `key` (matched by prefix as rt-app does, so `run0`, `sleep1`...).
fn event(key: &str, value: &Value, path: &str) -> Result<Event, ScenarioError> {
    const UNSUPPORTED: [&str; 12] = [
        "lock", "unlock", "wait", "signal", "broad", "sync", "barrier", "suspend", "resume", "mem",
        "iorun", "fork",
    ];
    if key.starts_with("runtime") {
        Ok(Event::Runtime {
            us: integer(value, path)?,
        })
    } else if key.starts_with("run") {
        Ok(Event::Run {
            us: integer(value, path)?,
        })
    } else if key.starts_with("sleep") {
        Ok(Event::Sleep {
            us: integer(value, path)?,
        })
    } else if key.starts_with("timer") {
        let mut reference = String::from("unique");
        let mut period_us = None;
        let mut mode = TimerMode::Relative;
        for (k, v) in object(value, path)? {
            let here = join(path, k);
            match k.as_str() {
                "ref" => reference = string(v, &here)?.to_string(),
                "period" => period_us = Some(integer(v, &here)?),
                "mode" => {
                    mode = match string(v, &here)? {
                        "relative" => TimerMode::Relative,
                        "absolute" => TimerMode::Absolute,
                        _ => return Err(wrong_type(&here, "\"relative\" or \"absolute\"", v)),
                    }
                }
                _ => return Err(unknown(&here)),
            }
        }
        Ok(Event::Timer {
            reference,
            period_us,
            mode,
        })
    } else if key.starts_with("yield") {
        Ok(Event::Yield)
    } else if UNSUPPORTED.iter().any(|u| key.starts_with(u)) {
        Err(ScenarioError::new(path, ErrorKind::UnsupportedEvent))
    } else {
        Err(unknown(path))
    }
}

fn parse_phase(
    name: &str,
    map: &Map<String, Value>,
    path: &str,
    skip: &[&str],
) -> Result<Phase, ScenarioError> {
    let mut phase = Phase {
        name: name.to_string(),
        loop_count: 1,
        attributes: Attributes::default(),
        events: Vec::new(),
    };
    for (key, value) in map {
        let here = join(path, key);
        if skip.contains(&key.as_str()) || attribute(&mut phase.attributes, key, value, &here)? {
            continue;
        }
        if key == "loop" {
            phase.loop_count = integer(value, &here)?;
            continue;
        }
        phase.events.push(NamedEvent {
            key: key.clone(),
            event: event(key, value, &here)?,
        });
    }
    Ok(phase)
}

fn parse_task(name: &str, value: &Value) -> Result<TaskSpec, ScenarioError> {
    let path = join("tasks", name);
    let map = object(value, &path)?;
    let mut task = TaskSpec {
        name: name.to_string(),
        instances: 1,
        loop_count: -1,
        delay_us: 0,
        attributes: Attributes::default(),
        phases: Vec::new(),
    };
    const TASK_KEYS: [&str; 4] = ["instance", "loop", "delay", "phases"];
    for (key, value) in map {
        let here = join(&path, key);
        match key.as_str() {
            "instance" => task.instances = integer(value, &here)?,
            "loop" => task.loop_count = integer(value, &here)?,
            "delay" => task.delay_us = integer(value, &here)?,
            "phases" => {
                for (phase_name, phase) in object(value, &here)? {
                    let phase_path = join(&here, phase_name);
                    let phase_map = object(phase, &phase_path)?;
                    task.phases
                        .push(parse_phase(phase_name, phase_map, &phase_path, &[])?);
                }
            }
            _ => {
                if !attribute(&mut task.attributes, key, value, &here)?
                    && map.contains_key("phases")
                {
                    // With a `phases` object, events cannot also sit in the task.
                    return Err(unknown(&here));
                }
            }
        }
    }
    if !map.contains_key("phases") {
        // Events directly in the task form one implicit phase (rt-app tutorial).
        let mut phase = parse_phase("", map, &path, &TASK_KEYS)?;
        phase.attributes = Attributes::default();
        task.phases.push(phase);
    }
    Ok(task)
}
