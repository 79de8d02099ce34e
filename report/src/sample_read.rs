//! Samples that carry counter values (`PERF_SAMPLE_READ`, e.g. recorded
//! with `-e '{cpu-clock,page-faults}:S'`): perf delivers such a sample
//! once per value, to the event that owns the value's id, with the growth
//! of that counter since its last sample as the period, and not at all
//! where it did not grow (perf's `deliver_sample_value`).

use prec_format::constants::sample_type as st;
use prec_format::{PerfFile, Sample};
use rustc_hash::FxHashMap as HashMap;

/// One delivery of a sample: to the event at `attr_index`, with `period`
/// (`None`: the sample's own period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub attr_index: usize,
    pub period: Option<u64>,
}

/// Where one sample goes: without counter values (the common case, kept
/// free of allocation) to its own event, else to each grown counter's.
pub enum Deliveries {
    One(Option<Delivery>),
    Many(std::vec::IntoIter<Delivery>),
}

impl Iterator for Deliveries {
    type Item = Delivery;
    fn next(&mut self) -> Option<Delivery> {
        match self {
            Deliveries::One(d) => d.take(),
            Deliveries::Many(it) => it.next(),
        }
    }
}

/// The last value seen of each counter (by event id), across a walk.
#[derive(Default)]
pub struct SampleReads {
    last: HashMap<u64, u64>,
}

impl SampleReads {
    /// Where the sample `s` of the event at `attr_index` goes; ids
    /// that belong to no event are counted in `unknown_id`.
    pub fn deliveries(
        &mut self,
        file: &PerfFile<'_>,
        attr_index: usize,
        s: &Sample<'_>,
        unknown_id: &mut u64,
    ) -> Deliveries {
        let attr = &file.attrs()[attr_index].attr;
        let read = match (&s.read, attr.sample_type & st::READ != 0) {
            (Some(read), true) => read,
            _ => {
                return Deliveries::One(Some(Delivery {
                    attr_index,
                    period: None,
                }))
            }
        };
        let mut out = Vec::new();
        for v in read.iter() {
            let owner = v.id.and_then(|id| Some((id, file.attr_of_id(id)?)));
            let Some((id, owner)) = owner else {
                *unknown_id += 1;
                continue;
            };
            let last = self.last.insert(id, v.value).unwrap_or(0);
            let period = v.value.wrapping_sub(last);
            if period != 0 {
                out.push(Delivery {
                    attr_index: owner,
                    period: Some(period),
                });
            }
        }
        Deliveries::Many(out.into_iter())
    }
}
