//! A task's clamp requests (`p->uclamp_req[]`), their validation, and the
//! system-wide limits and RT default boost set by the sysctls (facts §3.1, §3.3).

use crate::task::{ParamError, Policy, TaskParams};

/// The capacity of the biggest CPU at its highest frequency, and the largest
/// clamp value (`SCHED_CAPACITY_SCALE`, §3.1, §9).
pub const SCHED_CAPACITY_SCALE: u16 = 1024;

/// Which of the two clamps (`UCLAMP_MIN = 0`, `UCLAMP_MAX = 1`, §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClampId {
    /// The floor: the utilization is reported at least this high (a boost).
    Min = 0,
    /// The ceiling: the utilization is reported at most this high (a cap).
    Max = 1,
}

impl ClampId {
    /// Both clamps, in Linux's `for_each_clamp_id` order.
    pub const ALL: [ClampId; 2] = [ClampId::Min, ClampId::Max];

    /// The index into per-clamp arrays.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The value of a clamp that clamps nothing (`uclamp_none`, §3.1):
/// 0 for the floor, 1024 for the ceiling.
pub const fn uclamp_none(clamp_id: ClampId) -> u16 {
    match clamp_id {
        ClampId::Min => 0,
        ClampId::Max => SCHED_CAPACITY_SCALE,
    }
}

/// One requested clamp (`struct uclamp_se` as held in `uclamp_req`, §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClampRequest {
    /// The requested value, `0..=1024`.
    pub value: u16,
    /// Whether the user set it (then the RT default boost leaves it alone, §3.3).
    pub user_defined: bool,
}

/// A task's requested clamps (`p->uclamp_req[]`, §3.1), indexed by [`ClampId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampRequest {
    requests: [ClampRequest; 2],
}

impl Default for UclampRequest {
    /// No request: the "none" values, not user defined.
    fn default() -> Self {
        UclampRequest {
            requests: ClampId::ALL.map(|clamp_id| ClampRequest {
                value: uclamp_none(clamp_id),
                user_defined: false,
            }),
        }
    }
}

impl UclampRequest {
    /// The requests of a task created with `params` (fork plus `sched_setattr`):
    /// the user's values where given; otherwise the "none" values, except that an
    /// RT task's floor is the RT default boost
    /// (`sysctl_sched_uclamp_util_min_rt_default`, §3.3).
    pub fn from_params(params: &TaskParams, sysctl: &UclampSysctl) -> Result<Self, ParamError> {
        validate_uclamp(params.uclamp_min, params.uclamp_max)?;
        let mut request = UclampRequest::default();
        if let Some(value) = params.uclamp_min {
            request.requests[ClampId::Min.index()] = ClampRequest {
                value,
                user_defined: true,
            };
        }
        if let Some(value) = params.uclamp_max {
            request.requests[ClampId::Max.index()] = ClampRequest {
                value,
                user_defined: true,
            };
        }
        request.update_util_min_rt_default(params.policy, sysctl);
        Ok(request)
    }

    /// The request for `clamp_id`.
    pub const fn get(&self, clamp_id: ClampId) -> ClampRequest {
        self.requests[clamp_id.index()]
    }

    /// Re-applies the RT default boost after the sysctl changed
    /// (`__uclamp_update_util_min_rt_default`, §3.3): only RT tasks whose floor
    /// the user did not set take the new value.
    pub fn update_util_min_rt_default(&mut self, policy: Policy, sysctl: &UclampSysctl) {
        let floor = &mut self.requests[ClampId::Min.index()];
        if is_realtime(policy) && !floor.user_defined {
            floor.value = sysctl.util_min_rt_default();
        }
    }
}

/// Whether `policy` belongs to the RT class (SCHED_FIFO or SCHED_RR).
const fn is_realtime(policy: Policy) -> bool {
    matches!(policy, Policy::Fifo { .. } | Policy::RoundRobin { .. })
}

/// Checks requested clamps as `sched_setattr` does: each in `0..=1024`, and the
/// floor not above the ceiling when both are given. The error names the field
/// and its value; for `min > max` it is `uclamp_min` outside `0..=uclamp_max`.
pub fn validate_uclamp(min: Option<u16>, max: Option<u16>) -> Result<(), ParamError> {
    for (field, value) in [("uclamp_min", min), ("uclamp_max", max)] {
        if let Some(value) = value {
            check_clamp(field, value)?;
        }
    }
    match (min, max) {
        (Some(min), Some(max)) if min > max => Err(ParamError::OutOfRange {
            field: "uclamp_min",
            value: i64::from(min),
            min: 0,
            max: i64::from(max),
        }),
        _ => Ok(()),
    }
}

fn check_clamp(field: &'static str, value: u16) -> Result<(), ParamError> {
    if value > SCHED_CAPACITY_SCALE {
        Err(ParamError::OutOfRange {
            field,
            value: i64::from(value),
            min: 0,
            max: i64::from(SCHED_CAPACITY_SCALE),
        })
    } else {
        Ok(())
    }
}

/// The system-wide clamp settings (`/proc/sys/kernel/sched_util_clamp_*`, §3.3).
///
/// `util_min` and `util_max` are *limits*: an effective clamp never exceeds
/// them. `util_min_rt_default` is the floor RT tasks get when the user set none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampSysctl {
    util_min: u16,
    util_max: u16,
    util_min_rt_default: u16,
}

impl Default for UclampSysctl {
    /// All three are 1024 (§3.3, §9): no limit, and RT runs at the top.
    fn default() -> Self {
        UclampSysctl {
            util_min: SCHED_CAPACITY_SCALE,
            util_max: SCHED_CAPACITY_SCALE,
            util_min_rt_default: SCHED_CAPACITY_SCALE,
        }
    }
}

impl UclampSysctl {
    /// Settings validated as the sysctl handler does (§3.3):
    /// `util_min <= util_max <= 1024` and `util_min_rt_default <= 1024`.
    pub fn new(util_min: u16, util_max: u16, util_min_rt_default: u16) -> Result<Self, ParamError> {
        check_clamp("sched_util_clamp_max", util_max)?;
        check_clamp("sched_util_clamp_min_rt_default", util_min_rt_default)?;
        if util_min > util_max {
            return Err(ParamError::OutOfRange {
                field: "sched_util_clamp_min",
                value: i64::from(util_min),
                min: 0,
                max: i64::from(util_max),
            });
        }
        Ok(UclampSysctl {
            util_min,
            util_max,
            util_min_rt_default,
        })
    }

    /// `sysctl_sched_uclamp_util_min`.
    pub const fn util_min(&self) -> u16 {
        self.util_min
    }

    /// `sysctl_sched_uclamp_util_max`.
    pub const fn util_max(&self) -> u16 {
        self.util_max
    }

    /// `sysctl_sched_uclamp_util_min_rt_default`.
    pub const fn util_min_rt_default(&self) -> u16 {
        self.util_min_rt_default
    }

    /// `uclamp_default[clamp_id]`, the system limit for that clamp.
    pub const fn limit(&self, clamp_id: ClampId) -> u16 {
        match clamp_id {
            ClampId::Min => self.util_min,
            ClampId::Max => self.util_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(policy: Policy, min: Option<u16>, max: Option<u16>) -> TaskParams {
        TaskParams {
            policy,
            uclamp_min: min,
            uclamp_max: max,
            ..TaskParams::default()
        }
    }

    #[test]
    fn clamp_above_1024_is_refused_naming_field_and_value() {
        // §3.1: clamps are in [0, 1024].
        let expected = |field| ParamError::OutOfRange {
            field,
            value: 1025,
            min: 0,
            max: 1024,
        };
        assert_eq!(
            validate_uclamp(Some(1025), None),
            Err(expected("uclamp_min"))
        );
        assert_eq!(
            validate_uclamp(None, Some(1025)),
            Err(expected("uclamp_max"))
        );
        let p = params(Policy::default(), None, Some(1025));
        assert_eq!(p.validate(), Err(expected("uclamp_max")));
        assert_eq!(
            UclampRequest::from_params(&p, &UclampSysctl::default()),
            Err(expected("uclamp_max"))
        );
        assert_eq!(validate_uclamp(Some(1024), Some(1024)), Ok(()));
        assert_eq!(validate_uclamp(Some(0), Some(0)), Ok(()));
    }

    #[test]
    fn floor_above_ceiling_is_refused() {
        let err = params(Policy::default(), Some(600), Some(500)).validate();
        assert_eq!(
            err,
            Err(ParamError::OutOfRange {
                field: "uclamp_min",
                value: 600,
                min: 0,
                max: 500
            })
        );
        assert_eq!(validate_uclamp(Some(500), Some(500)), Ok(()));
    }

    #[test]
    fn defaults_are_the_none_values_and_user_values_are_user_defined() {
        let sysctl = UclampSysctl::default();
        let r = UclampRequest::from_params(&TaskParams::default(), &sysctl).unwrap();
        assert_eq!(
            r.get(ClampId::Min),
            ClampRequest {
                value: 0,
                user_defined: false
            }
        );
        assert_eq!(r.get(ClampId::Max).value, 1024);
        let r =
            UclampRequest::from_params(&params(Policy::default(), Some(100), Some(300)), &sysctl)
                .unwrap();
        assert_eq!(
            r.get(ClampId::Min),
            ClampRequest {
                value: 100,
                user_defined: true
            }
        );
        assert_eq!(r.get(ClampId::Max).value, 300);
    }

    #[test]
    fn rt_tasks_get_the_rt_default_boost_unless_user_defined() {
        // §3.3: sysctl_sched_uclamp_util_min_rt_default defaults to 1024.
        let sysctl = UclampSysctl::default();
        assert_eq!(sysctl.util_min_rt_default(), 1024);
        for policy in [
            Policy::Fifo { priority: 1 },
            Policy::RoundRobin { priority: 99 },
        ] {
            let r = UclampRequest::from_params(&params(policy, None, None), &sysctl).unwrap();
            assert_eq!(r.get(ClampId::Min).value, 1024, "{policy:?}");
            assert!(!r.get(ClampId::Min).user_defined);
            let r = UclampRequest::from_params(&params(policy, Some(200), None), &sysctl).unwrap();
            assert_eq!(r.get(ClampId::Min).value, 200, "user value wins");
        }
        // Fair tasks are not boosted.
        let r = UclampRequest::from_params(&params(Policy::Batch { nice: 0 }, None, None), &sysctl)
            .unwrap();
        assert_eq!(r.get(ClampId::Min).value, 0);
        // A sysctl change reaches RT tasks without a user floor only.
        let lower = UclampSysctl::new(1024, 1024, 300).unwrap();
        let fifo = Policy::Fifo { priority: 5 };
        let mut r = UclampRequest::from_params(&params(fifo, None, None), &sysctl).unwrap();
        r.update_util_min_rt_default(fifo, &lower);
        assert_eq!(r.get(ClampId::Min).value, 300);
        let mut r = UclampRequest::from_params(&params(fifo, Some(10), None), &sysctl).unwrap();
        r.update_util_min_rt_default(fifo, &lower);
        assert_eq!(r.get(ClampId::Min).value, 10);
    }

    #[test]
    fn sysctl_validation() {
        // §3.3: min <= max <= 1024 and min_rt_default <= 1024.
        assert_eq!(
            UclampSysctl::new(600, 500, 0),
            Err(ParamError::OutOfRange {
                field: "sched_util_clamp_min",
                value: 600,
                min: 0,
                max: 500
            })
        );
        assert_eq!(
            UclampSysctl::new(0, 1025, 0),
            Err(ParamError::OutOfRange {
                field: "sched_util_clamp_max",
                value: 1025,
                min: 0,
                max: 1024
            })
        );
        assert_eq!(
            UclampSysctl::new(0, 1024, 1025),
            Err(ParamError::OutOfRange {
                field: "sched_util_clamp_min_rt_default",
                value: 1025,
                min: 0,
                max: 1024
            })
        );
        let s = UclampSysctl::new(100, 800, 512).unwrap();
        assert_eq!((s.limit(ClampId::Min), s.limit(ClampId::Max)), (100, 800));
    }
}
