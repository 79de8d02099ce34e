//! Prints per-type record counts of a perf.data (a quick parser check).
use std::collections::BTreeMap;

fn main() {
    for path in std::env::args().skip(1) {
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let file = match prec_format::PerfFile::parse(&data) {
            Ok(f) => f,
            Err(e) => {
                println!("{path}: error {e}");
                continue;
            }
        };
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        let mut err = None;
        let mut bad = 0;
        for r in file.records() {
            match r {
                Ok(r) => {
                    *counts.entry(r.header.kind.0).or_default() += 1;
                    if file.parse_record(&r).is_err() {
                        bad += 1;
                    }
                }
                Err(e) => err = Some(e),
            }
        }
        println!(
            "{path}: {:?} attrs={} bad={bad} err={:?} warn={:?}",
            counts,
            file.attrs().len(),
            err.map(|e| e.to_string()),
            file.warnings()
        );
    }
}
