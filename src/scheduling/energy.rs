//! The board's energy model (docs/linux-sched-reference.md §5.1), built at
//! boot from the device tree's OPP tables and `dynamic-power-coefficient`
//! with the scheduling core's rules (`fairway_sched::energy`), as Linux
//! registers one per performance domain (`dev_pm_opp_of_register_em`).

use alloc::vec::Vec;

use fairway_sched::energy::{OperatingPoint, PerfDomainModel};
use spin::Once;

use crate::board::BoardInfo;

/// Each performance domain's model, with the mask of its CPUs; empty when
/// the board has no OPP tables or no power coefficients.
static MODELS: Once<Vec<(u32, PerfDomainModel)>> = Once::new();

/// Builds and logs the model of every performance domain. A domain whose
/// CPUs give no `dynamic-power-coefficient` gets none (Linux registers none:
/// no energy-aware scheduling); a table the model refuses stops the boot,
/// naming the domain, its CPUs and the state (false, with it logged).
pub fn init(board: &BoardInfo) -> bool {
    let mut models = Vec::new();
    for (index, domain) in board.perf_domains.iter().enumerate() {
        let mut cpus = 0u32;
        let mut first = None;
        for (cpu, info) in board.cpus.iter().enumerate() {
            if info.perf_domain == Some(index as u8) {
                cpus |= 1 << cpu;
                first.get_or_insert(info);
            }
        }
        let Some(first) = first else { continue };
        let Some(coefficient) = first.dynamic_power_coefficient.filter(|&c| c > 0) else {
            defmt::warn!(
                "energy model: perf domain {=usize} (cpus {=u32:#x}): no dynamic-power-coefficient; no model",
                index,
                cpus
            );
            continue;
        };
        let points: Vec<OperatingPoint> = domain
            .opps
            .iter()
            .map(|opp| OperatingPoint {
                hz: opp.hz,
                microvolt: u64::from(opp.microvolt),
            })
            .collect();
        match PerfDomainModel::from_operating_points(
            &points,
            coefficient,
            u64::from(first.capacity),
        ) {
            Ok(model) => {
                let (low, high) = (model.states[0], model.states[model.states.len() - 1]);
                defmt::info!(
                    "energy model: perf domain {=usize} (cpus {=u32:#x}): {=usize} states, {=u64} to {=u64} uW, cost {=u64} to {=u64}, {=usize} inefficient",
                    index,
                    cpus,
                    model.states.len(),
                    low.power,
                    high.power,
                    low.cost,
                    high.cost,
                    model.states.iter().filter(|s| s.inefficient).count()
                );
                models.push((cpus, model));
            }
            Err(error) => {
                defmt::error!(
                    "device tree: perf domain {=usize} (cpus {=u32:#x}, its operating-points-v2 table): energy model refused: {}",
                    index,
                    cpus,
                    defmt::Display2Format(&error)
                );
                return false;
            }
        }
    }
    MODELS.call_once(|| models);
    true
}

/// The performance domains' models (empty before `init` or without one).
pub fn models() -> &'static [(u32, PerfDomainModel)] {
    MODELS.get().map_or(&[], Vec::as_slice)
}
