//! Times the reader over a perf.data held in memory.
//!
//! `parse_bench FILE`: (a) `records()` + `parse_record` of every record,
//! (b) `ordered_records()` + `parse_record`. The file is read before timing
//! (warm page cache, no I/O in the timed region).
use std::hint::black_box;
use std::time::Instant;

use prec_format::{PerfFile, Record};

#[derive(Default)]
struct Acc {
    records: u64,
    errors: u64,
    ip_sum: u64,
    chain_len: u64,
}

impl Acc {
    fn add(&mut self, file: &PerfFile<'_>, r: &prec_format::RawRecord<'_>) {
        self.records += 1;
        match file.parse_record(r) {
            Ok(Record::Sample(s)) => {
                self.ip_sum = self.ip_sum.wrapping_add(s.ip.unwrap_or(0));
                if let Some(c) = &s.callchain {
                    self.chain_len += c.len() as u64;
                    for ip in c.iter() {
                        self.ip_sum = self.ip_sum.wrapping_add(ip);
                    }
                }
                self.ip_sum = self.ip_sum.wrapping_add(s.time.unwrap_or(0));
                self.ip_sum = self.ip_sum.wrapping_add(s.period.unwrap_or(0));
            }
            Ok(_) => {}
            Err(_) => self.errors += 1,
        }
    }
}

fn report(name: &str, bytes: usize, acc: &Acc, secs: f64) {
    println!(
        "{name}: {:.3} s, {:.0} MB/s, {:.2} M records/s ({} records, {} errors, {} callchain entries, checksum {:#x})",
        secs,
        bytes as f64 / 1e6 / secs,
        acc.records as f64 / 1e6 / secs,
        acc.records,
        acc.errors,
        acc.chain_len,
        acc.ip_sum
    );
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: parse_bench FILE");
        std::process::exit(2)
    });
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    println!(
        "{path}: {} bytes ({:.1} MB)",
        data.len(),
        data.len() as f64 / 1e6
    );

    let t = Instant::now();
    let file = PerfFile::parse(black_box(&data)).expect("parse");
    let mut acc = Acc::default();
    for r in file.records() {
        match r {
            Ok(r) => acc.add(&file, &r),
            Err(e) => {
                eprintln!("records: {e}");
                break;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    black_box(&acc);
    report("records+parse", data.len(), &acc, secs);

    let t = Instant::now();
    let file = PerfFile::parse(black_box(&data)).expect("parse");
    let mut acc = Acc::default();
    for r in file.ordered_records() {
        match r {
            Ok(r) => acc.add(&file, &r),
            Err(e) => {
                eprintln!("ordered_records: {e}");
                break;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    black_box(&acc);
    report("ordered_records+parse", data.len(), &acc, secs);
}
