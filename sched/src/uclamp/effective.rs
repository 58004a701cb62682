//! Effective clamp values: a task's request restricted by its task group and
//! limited by the system defaults (`uclamp_eff_get`, facts §3.3), and the
//! groups' own effective values (`cpu.uclamp.min/max`, `cpu_util_update_eff`).

use super::request::{ClampId, SCHED_CAPACITY_SCALE, UclampRequest, UclampSysctl};
use crate::task::ParamError;

/// A cgroup percentage with two decimals (`cpu.uclamp.*` takes `"12.34"`, here
/// 1234) in capacity units: `DIV_ROUND_CLOSEST(percent_x100 << 10, 10000)` (§3.3).
pub fn percent_to_util(percent_x100: u32) -> Result<u16, ParamError> {
    if percent_x100 > 10_000 {
        return Err(ParamError::OutOfRange {
            field: "cpu.uclamp percent_x100",
            value: i64::from(percent_x100),
            min: 0,
            max: 10_000,
        });
    }
    let util = ((percent_x100 << 10) + 5_000) / 10_000;
    // At most 1024 by the range check above.
    Ok(util as u16)
}

/// One task group's clamps on one system (they are not per CPU): what the
/// group asks for, and what it gets once its ancestors are taken into account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupUclamp {
    requested: [u16; 2],
    effective: [u16; 2],
}

impl GroupUclamp {
    /// The root group. It restricts nothing (tasks in it use their own request,
    /// §3.3), so as a parent it passes on the widest range, 1024 for both, and
    /// `min(own, parent)` leaves each first-level group's request intact.
    pub const ROOT: GroupUclamp = GroupUclamp {
        requested: [SCHED_CAPACITY_SCALE; 2],
        effective: [SCHED_CAPACITY_SCALE; 2],
    };

    /// A child of `parent` asking for `min` and `max` (capacity units; the
    /// cgroup defaults are 0 and 1024, i.e. "0 %" and "max"). A floor above the
    /// ceiling is accepted, as cgroups accept it; the effective floor is lowered.
    pub fn new(min: u16, max: u16, parent: &GroupUclamp) -> Result<Self, ParamError> {
        for (field, value) in [("cpu.uclamp.min", min), ("cpu.uclamp.max", max)] {
            if value > SCHED_CAPACITY_SCALE {
                return Err(ParamError::OutOfRange {
                    field,
                    value: i64::from(value),
                    min: 0,
                    max: i64::from(SCHED_CAPACITY_SCALE),
                });
            }
        }
        let mut group = GroupUclamp {
            requested: [min, max],
            effective: [min, max],
        };
        group.update_effective(parent);
        Ok(group)
    }

    /// Recomputes the effective values from the parent's (one step of the
    /// top-down `cpu_util_update_eff`, §3.3): `eff = min(own, parent eff)` per
    /// clamp, then `eff.min = min(eff.min, eff.max)`. The owner of the group
    /// tree calls it for every descendant, parents first, after a change.
    pub fn update_effective(&mut self, parent: &GroupUclamp) {
        let min = self.requested[0].min(parent.effective[0]);
        let max = self.requested[1].min(parent.effective[1]);
        self.effective = [min.min(max), max];
    }

    /// What the group asked for.
    pub const fn requested(&self, clamp_id: ClampId) -> u16 {
        self.requested[clamp_id.index()]
    }

    /// What the group gets (`tg->uclamp[clamp_id].value`).
    pub const fn effective(&self, clamp_id: ClampId) -> u16 {
        self.effective[clamp_id.index()]
    }
}

/// `uclamp_tg_restrict` (§3.3): in the root group (`None`) the request
/// stands; otherwise it is clamped into the group's effective `[min, max]`.
pub fn uclamp_tg_restrict(request: u16, group: Option<&GroupUclamp>) -> u16 {
    match group {
        None => request,
        Some(group) => request
            .max(group.effective(ClampId::Min))
            .min(group.effective(ClampId::Max)),
    }
}

/// `uclamp_eff_get` (§3.3): the group-restricted request, never above the
/// system limit `uclamp_default[clamp_id]`.
pub fn uclamp_eff_get(
    request: &UclampRequest,
    clamp_id: ClampId,
    group: Option<&GroupUclamp>,
    sysctl: &UclampSysctl,
) -> u16 {
    uclamp_tg_restrict(request.get(clamp_id).value, group).min(sysctl.limit(clamp_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Policy, TaskParams};

    fn request(policy: Policy, min: Option<u16>, max: Option<u16>) -> UclampRequest {
        let params = TaskParams {
            policy,
            uclamp_min: min,
            uclamp_max: max,
            ..TaskParams::default()
        };
        UclampRequest::from_params(&params, &UclampSysctl::default()).unwrap()
    }

    fn eff(r: &UclampRequest, g: Option<&GroupUclamp>, s: &UclampSysctl) -> (u16, u16) {
        (
            uclamp_eff_get(r, ClampId::Min, g, s),
            uclamp_eff_get(r, ClampId::Max, g, s),
        )
    }

    #[test]
    fn percent_conversion() {
        // DIV_ROUND_CLOSEST(p << 10, 10000), by hand:
        // 20.00 %: 2000*1024 = 2_048_000 -> 204.8 -> 205; 30.00 %: 307.2 -> 307;
        // 50.00 %: 512; 80.00 %: 819.2 -> 819; 33.33 %: 341.29 -> 341; 100 %: 1024.
        for (p, util) in [
            (0, 0),
            (2000, 205),
            (3000, 307),
            (5000, 512),
            (8000, 819),
            (3333, 341),
            (10_000, 1024),
        ] {
            assert_eq!(percent_to_util(p), Ok(util), "{p}");
        }
        assert!(matches!(
            percent_to_util(10_001),
            Err(ParamError::OutOfRange { value: 10_001, .. })
        ));
    }

    #[test]
    fn root_group_does_not_restrict() {
        // §3.3: in the root group the request is used as is.
        let s = UclampSysctl::default();
        let r = request(Policy::default(), Some(300), Some(700));
        assert_eq!(eff(&r, None, &s), (300, 700));
    }

    #[test]
    fn group_restricts_into_its_effective_range() {
        let s = UclampSysctl::default();
        // Group A under root: min 20 % = 205, max 50 % = 512.
        // eff = (min(205, 1024), min(512, 1024)) = (205, 512); 205 <= 512 keeps it.
        let a = GroupUclamp::new(205, 512, &GroupUclamp::ROOT).unwrap();
        assert_eq!(
            (a.effective(ClampId::Min), a.effective(ClampId::Max)),
            (205, 512)
        );
        // Default task (0, 1024): clamp(0, 205, 512) = 205, clamp(1024, 205, 512) = 512.
        assert_eq!(
            eff(&request(Policy::default(), None, None), Some(&a), &s),
            (205, 512)
        );
        // Task (400, 1024): min 400 is inside [205, 512] and stays.
        assert_eq!(
            eff(&request(Policy::default(), Some(400), None), Some(&a), &s),
            (400, 512)
        );
        // Task (0, 100): max clamp(100, 205, 512) = 205 (the group floor wins).
        assert_eq!(
            eff(&request(Policy::default(), None, Some(100)), Some(&a), &s),
            (205, 205)
        );
        // Task (600, 900): min clamp(600, 205, 512) = 512, max 512.
        assert_eq!(
            eff(
                &request(Policy::default(), Some(600), Some(900)),
                Some(&a),
                &s
            ),
            (512, 512)
        );
    }

    #[test]
    fn nested_groups_take_the_minimum_of_the_chain() {
        let a = GroupUclamp::new(205, 512, &GroupUclamp::ROOT).unwrap();
        // B under A asks (614, 1024): eff = (min(614, 205), min(1024, 512)) = (205, 512).
        let b = GroupUclamp::new(614, 1024, &a).unwrap();
        assert_eq!(
            (b.effective(ClampId::Min), b.effective(ClampId::Max)),
            (205, 512)
        );
        assert_eq!(b.requested(ClampId::Min), 614);
        // C under root asks (819, 307): eff = (819, 307), then min = min(819, 307) = 307.
        let c = GroupUclamp::new(819, 307, &GroupUclamp::ROOT).unwrap();
        assert_eq!(
            (c.effective(ClampId::Min), c.effective(ClampId::Max)),
            (307, 307)
        );
        let s = UclampSysctl::default();
        assert_eq!(
            eff(&request(Policy::default(), Some(50), None), Some(&c), &s),
            (307, 307)
        );
        // Re-parenting recomputes: B under the root keeps its own request.
        let mut b2 = b;
        b2.update_effective(&GroupUclamp::ROOT);
        assert_eq!(
            (b2.effective(ClampId::Min), b2.effective(ClampId::Max)),
            (614, 1024)
        );
        assert!(matches!(
            GroupUclamp::new(0, 1025, &GroupUclamp::ROOT),
            Err(ParamError::OutOfRange {
                field: "cpu.uclamp.max",
                value: 1025,
                ..
            })
        ));
    }

    #[test]
    fn system_defaults_are_limits_and_rt_boost_applies() {
        // §3.3: RT default boost 1024, limited by sysctl_sched_uclamp_util_min.
        let fifo = request(Policy::Fifo { priority: 10 }, None, None);
        assert_eq!(eff(&fifo, None, &UclampSysctl::default()), (1024, 1024));
        let limited = UclampSysctl::new(100, 900, 1024).unwrap();
        // min(1024, 100) = 100; min(1024, 900) = 900.
        assert_eq!(eff(&fifo, None, &limited), (100, 900));
        // A fair task asking 300: min(300, 100) = 100.
        let fair = request(Policy::default(), Some(300), None);
        assert_eq!(eff(&fair, None, &limited), (100, 900));
        // RT task in group A (205, 512): clamp(1024, 205, 512) = 512 for both.
        let a = GroupUclamp::new(205, 512, &GroupUclamp::ROOT).unwrap();
        assert_eq!(eff(&fifo, Some(&a), &UclampSysctl::default()), (512, 512));
    }
}
