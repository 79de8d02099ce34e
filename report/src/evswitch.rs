//! `--switch-on`, `--switch-off` and `--show-on-off-events`: perf's
//! `evswitch`, which drops samples outside windows opened and closed by
//! samples of two chosen events.

/// The switch state over the samples, in delivery order (perf 6.1's
/// `evswitch__discard`, rules included: without an `on` event nothing is
/// dropped after the first `off` sample, and only that sample itself is
/// dropped).
#[derive(Clone, Debug, Default)]
pub struct EvSwitch {
    /// Attr index of the event whose samples start a window.
    pub on: Option<usize>,
    /// Attr index of the event whose samples end one.
    pub off: Option<usize>,
    /// Keep the samples that switch.
    pub show_on_off_events: bool,
    discarding: bool,
}

impl EvSwitch {
    /// A switch that drops samples until the first `on` sample, when
    /// `on` is set.
    pub fn new(on: Option<usize>, off: Option<usize>, show_on_off_events: bool) -> EvSwitch {
        EvSwitch {
            on,
            off,
            show_on_off_events,
            discarding: on.is_some(),
        }
    }

    /// Whether to drop a sample of event `attr_index`; advances the state.
    pub fn discard(&mut self, attr_index: usize) -> bool {
        if let Some(on) = self.on.filter(|_| self.discarding) {
            if on != attr_index {
                return true;
            }
            self.discarding = false;
            return !self.show_on_off_events;
        }
        if let Some(off) = self.off.filter(|_| !self.discarding) {
            if off != attr_index {
                return false;
            }
            self.discarding = true;
            return !self.show_on_off_events;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(mut s: EvSwitch, events: &[usize]) -> Vec<usize> {
        events.iter().copied().filter(|&e| !s.discard(e)).collect()
    }

    #[test]
    fn windows_open_at_on_and_close_at_off() {
        let events = [0, 1, 0, 2, 0, 1, 0];
        assert_eq!(
            kept(EvSwitch::new(Some(1), Some(2), false), &events),
            [0, 0]
        );
        assert_eq!(
            kept(EvSwitch::new(Some(1), Some(2), true), &events),
            [1, 0, 2, 1, 0]
        );
        // Only on: everything after the first on sample.
        assert_eq!(
            kept(EvSwitch::new(Some(1), None, false), &events),
            [0, 2, 0, 1, 0]
        );
        // Only off: perf drops just the first off sample.
        assert_eq!(
            kept(EvSwitch::new(None, Some(2), false), &events),
            [0, 1, 0, 0, 1, 0]
        );
        assert_eq!(kept(EvSwitch::default(), &events), events);
    }
}
