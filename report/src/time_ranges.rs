//! perf's `--time` filter (`util/time-utils.c`): one or more time ranges,
//! given in seconds (`START,STOP`, several separated by spaces) or as
//! percentages of the recording's sample time span (`10%/2`: the second
//! tenth; `0%-10%,30%-40%`; `25%`: the first quarter).

use prec_format::features::{self, Feature};
use prec_format::{FeatureId, PerfFile};

/// Parsed `--time` ranges, in ns; 0 is an open end (perf's
/// `perf_time_interval`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeRanges(Vec<(u64, u64)>);

impl TimeRanges {
    /// Parses a `--time` argument. Percentages need the first and last
    /// sample times (the SAMPLE_TIME header feature, see [`sample_times`]).
    pub fn parse(s: &str, sample_times: Option<(u64, u64)>) -> Result<TimeRanges, String> {
        if !s.contains('%') {
            return parse_seconds(s).ok_or_else(|| invalid(s));
        }
        let Some((first, last)) = sample_times.filter(|&t| t != (0, 0)) else {
            return Err(format!(
                "--time {s}: no first/last sample time in the perf.data header \
                 (SAMPLE_TIME, written by perf 4.17 and later and by prec): \
                 give the range in seconds instead"
            ));
        };
        let piece = if s.contains('/') {
            percent_slice
        } else if s.contains('-') {
            percent_range
        } else {
            // "X%": the first X% slice; the '%' must end the string.
            return match s.find('%') {
                Some(i) if i + 1 == s.len() => percent_slice(&format!("{s}/1"), first, last)
                    .map(|r| TimeRanges(vec![r]))
                    .ok_or_else(|| invalid(s)),
                _ => Err(invalid(s)),
            };
        };
        s.split(',')
            .map(|p| piece(p, first, last))
            .collect::<Option<Vec<_>>>()
            .map(TimeRanges)
            .ok_or_else(|| invalid(s))
    }

    /// perf script's `--time` with `--reltime`
    /// (`perf_time__parse_for_ranges_reltime`): the ranges as parsed, then
    /// each end moved by the first sample's time, an open end (0) too, so
    /// `0.05,` keeps nothing. It needs the first and last sample times.
    pub fn parse_relative(s: &str, sample_times: Option<(u64, u64)>) -> Result<TimeRanges, String> {
        let Some((first, _)) = sample_times.filter(|&t| t != (0, 0)) else {
            return Err(format!(
                "--time {s} --reltime: no first/last sample time in the perf.data header \
                 (SAMPLE_TIME, written by perf 4.17 and later and by prec): \
                 give the range in seconds without --reltime instead"
            ));
        };
        let TimeRanges(ranges) = TimeRanges::parse(s, sample_times)?;
        Ok(TimeRanges(
            ranges
                .into_iter()
                .map(|(start, end)| (start.saturating_add(first), end.saturating_add(first)))
                .collect(),
        ))
    }

    /// The ranges, in ns; 0 is an open end.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// perf's `perf_time__ranges_skip_sample`: whether a sample at `t`
    /// (0: no time) is left out.
    pub fn skips(&self, t: u64) -> bool {
        if t == 0 {
            return false;
        }
        match self.0.as_slice() {
            [] => false,
            [(start, end)] => (*start != 0 && t < *start) || (*end != 0 && t > *end),
            ranges => !ranges
                .iter()
                .any(|&(start, end)| t >= start && (t <= end || end == 0)),
        }
    }
}

fn invalid(s: &str) -> String {
    format!("Invalid time string `{s}'")
}

/// The SAMPLE_TIME feature's (first, last) sample times.
pub fn sample_times(file: &PerfFile<'_>) -> Option<(u64, u64)> {
    let f = file.feature(FeatureId::SAMPLE_TIME)?;
    match features::decode(f.id, f.data, f.offset, file.endian()) {
        Ok(Feature::SampleTime { first, last }) => Some((first, last)),
        _ => None,
    }
}

/// perf's `perf_time__parse_strs`: `START,STOP` pairs separated by
/// whitespace, in order and not overlapping.
fn parse_seconds(s: &str) -> Option<TimeRanges> {
    let pairs = s.matches(',').count();
    if pairs == 0 {
        return None;
    }
    let mut rest = s;
    let mut ranges = Vec::with_capacity(pairs);
    for _ in 1..pairs {
        // The value after this pair's comma ends at whitespace.
        let comma = rest.find(',')?;
        let after = &rest[comma + 1..];
        let value = after.trim_start();
        let len = value.find(char::is_whitespace).unwrap_or(value.len());
        if value[..len].contains(',') {
            return None;
        }
        let end = comma + 1 + (after.len() - value.len()) + len;
        ranges.push(parse_pair(&rest[..end])?);
        rest = rest.get(end + 1..).unwrap_or("");
    }
    ranges.push(parse_pair(rest)?);
    if ranges.windows(2).any(|w| w[0].1 >= w[1].0) {
        return None;
    }
    Some(TimeRanges(ranges))
}

/// perf's `perf_time__parse_str`: `START,STOP`, either may be empty.
fn parse_pair(s: &str) -> Option<(u64, u64)> {
    let (a, b) = s.split_once(',').unwrap_or((s, ""));
    let time = |x: &str| {
        if x.is_empty() {
            Some(0)
        } else {
            parse_nsec_time(x)
        }
    };
    let (start, end) = (time(a)?, time(b)?);
    if end != 0 && end < start {
        return None;
    }
    Some((start, end))
}

/// perf's `parse_nsec_time`: `SECONDS[.FRACTION]`, at most 9 fraction
/// digits.
fn parse_nsec_time(s: &str) -> Option<u64> {
    let (sec, frac) = match s.split_once('.') {
        Some((sec, frac)) => (sec, Some(frac)),
        None => (s, None),
    };
    let sec: u64 = sec.trim_start().parse().ok()?;
    let ns = match frac {
        None => 0,
        Some(f) if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) => return None,
        Some(f) => format!("{f:0<9}").parse().ok()?,
    };
    Some(sec.wrapping_mul(1_000_000_000).wrapping_add(ns))
}

/// perf's `parse_percent`: a number (what follows the '%' is ignored) as
/// a fraction.
fn parse_percent(s: &str) -> Option<f64> {
    let (number, _) = s.split_once('%')?;
    number.parse::<f64>().ok().map(|d| d / 100.0)
}

/// perf's `percent_slash_split`: `P%/N`, the N-th slice of P%.
fn percent_slice(s: &str, first: u64, last: u64) -> Option<(u64, u64)> {
    let (p, n) = s.split_once('/')?;
    let pcnt = parse_percent(p)?;
    let n: i64 = n.parse().ok()?;
    if pcnt <= 0.0 {
        return None;
    }
    percent_time(pcnt * (n - 1) as f64, pcnt * n as f64, first, last)
}

/// perf's `percent_dash_split`: `A%-B%`.
fn percent_range(s: &str, first: u64, last: u64) -> Option<(u64, u64)> {
    let (a, b) = s.split_once('-')?;
    percent_time(parse_percent(a)?, parse_percent(b)?, first, last)
}

/// perf's `set_percent_time`: the range ends a nanosecond before the next
/// one starts, except at the last sample.
fn percent_time(start_pcnt: f64, end_pcnt: f64, first: u64, last: u64) -> Option<(u64, u64)> {
    if !(0.0..=1.0).contains(&start_pcnt) || !(0.0..=1.0).contains(&end_pcnt) {
        return None;
    }
    let total = last.wrapping_sub(first) as f64;
    let start = first.wrapping_add((start_pcnt * total).round() as u64);
    let mut end = first.wrapping_add((end_pcnt * total).round() as u64);
    if end > start && end != last {
        end -= 1;
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_ranges_parse_like_perf() {
        let r = |s| TimeRanges::parse(s, None);
        assert_eq!(
            r("1.5,2"),
            Ok(TimeRanges(vec![(1_500_000_000, 2_000_000_000)]))
        );
        assert_eq!(r(",3"), Ok(TimeRanges(vec![(0, 3_000_000_000)])));
        assert_eq!(
            r("1,2 3.000000001,4"),
            Ok(TimeRanges(vec![
                (1_000_000_000, 2_000_000_000),
                (3_000_000_001, 4_000_000_000)
            ]))
        );
        // No comma, overlap, end before start, too many digits.
        for bad in ["5", "1,3 2,4", "2,1", "1.0000000001,2", "1,2,3"] {
            assert!(r(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percent_slices_end_before_the_next() {
        let times = Some((1000, 2000));
        let r = |s| TimeRanges::parse(s, times);
        assert_eq!(r("10%/2"), Ok(TimeRanges(vec![(1100, 1199)])));
        assert_eq!(r("10%"), r("10%/1"));
        assert_eq!(r("50%-100%"), Ok(TimeRanges(vec![(1500, 2000)])));
        assert_eq!(
            r("0%-10%,30%-40%"),
            Ok(TimeRanges(vec![(1000, 1099), (1300, 1399)]))
        );
        assert!(r("10%/11").is_err());
        assert!(TimeRanges::parse("10%", None).is_err());
    }

    #[test]
    fn samples_outside_every_range_are_skipped() {
        let one = TimeRanges(vec![(10, 20)]);
        assert!(one.skips(9) && !one.skips(10) && !one.skips(20) && one.skips(21));
        assert!(!one.skips(0), "no time: kept");
        let two = TimeRanges(vec![(10, 20), (30, 0)]);
        assert!(two.skips(25) && !two.skips(15) && !two.skips(1000));
    }
}
