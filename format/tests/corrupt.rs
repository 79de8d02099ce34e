//! Corrupted fixtures through the whole reader: truncations and byte flips
//! at deterministic pseudo-random offsets must give errors, never panics.

use std::path::{Path, PathBuf};

use prec_format::{features, PerfFile};

/// Release runs the full loop; debug builds fewer offsets per file.
const OFFSETS: usize = if cfg!(debug_assertions) { 12 } else { 100 };

fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/perf");
    let shared = Path::new("/work/shared/fixtures/quipper");
    for dir in [own.as_path(), shared] {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let wanted = if dir == shared {
                name.starts_with("perf.data.") && !name.ends_with(".buildids")
            } else {
                name.ends_with(".data")
            };
            if wanted && p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Everything a reader may do with a file.
fn exercise(data: &[u8]) {
    let Ok(file) = PerfFile::parse(data) else {
        return;
    };
    for r in file.records() {
        match r {
            Ok(r) => {
                let _ = file.parse_record(&r);
                let _ = file.record_time(&r);
            }
            Err(_) => break,
        }
    }
    for r in file.ordered_records() {
        match r {
            Ok(r) => {
                let _ = file.parse_record(&r);
            }
            Err(_) => break,
        }
    }
    for f in file.features() {
        let _ = features::decode(f.id, f.data, f.offset, file.endian());
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn run(path: &Path, data: &[u8]) {
    let mut rng = Rng(0x1234_5678_9abc_def1 ^ data.len() as u64);
    let check = |what: String, bytes: &[u8]| {
        let r = std::panic::catch_unwind(|| exercise(bytes));
        assert!(r.is_ok(), "{}: panic after {what}", path.display());
    };
    check("no change".into(), data);
    if data.is_empty() {
        return;
    }
    // Truncations: the header area densely, the rest at random.
    for i in 0..OFFSETS {
        let at = if i < 16 {
            (i * 13).min(data.len())
        } else {
            rng.below(data.len())
        };
        check(format!("truncation at {at}"), &data[..at]);
    }
    // Byte flips: single bytes set to patterns that make sizes and counts
    // absurd (0, 0xff, 0x80, random), one region at a time.
    let mut buf = data.to_vec();
    for i in 0..OFFSETS {
        let at = if i < 16 {
            rng.below(data.len().min(0x200))
        } else {
            rng.below(data.len())
        };
        let old = buf[at];
        let new = match rng.below(4) {
            0 => 0,
            1 => 0xff,
            2 => old ^ 0x80,
            _ => rng.next() as u8,
        };
        buf[at] = new;
        check(format!("byte {at:#x} {old:#04x} -> {new:#04x}"), &buf);
        buf[at] = old;
    }
}

#[test]
fn corrupted_fixtures_do_not_panic() {
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures found");
    let start = std::time::Instant::now();
    for p in &files {
        let data = std::fs::read(p).unwrap();
        run(p, &data);
    }
    eprintln!(
        "{} files, {} corruptions each, {:.1} s",
        files.len(),
        2 * OFFSETS,
        start.elapsed().as_secs_f64()
    );
}

/// Fuzz finding: a CPU_TOPOLOGY section without a known CPU count makes the
/// decoder try every count; each try allocated a vector sized by the bytes
/// left, so a large section took tens of seconds (under ASan).
#[test]
fn big_cpu_topology_decodes_quickly() {
    use prec_format::{Endian, FeatureId};
    let mut b = Vec::new();
    for _ in 0..2 {
        // core and thread sibling lists: one 4-byte string each
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(b"0-1\0");
    }
    b.resize(b.len() + 900_000, 0xff);
    let start = std::time::Instant::now();
    let _ = features::decode(FeatureId::CPU_TOPOLOGY, &b, 0, Endian::Little);
    let secs = start.elapsed().as_secs_f64();
    assert!(secs < 2.0, "CPU_TOPOLOGY decode took {secs:.1} s");
}

/// An attr_size larger than the attr section is refused by name (before,
/// the file read as one without events, and `prec script` printed nothing
/// and said nothing).
#[test]
fn oversized_attr_size_is_an_error() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/perf/hot3-default.data");
    let mut data = std::fs::read(&path).expect("read hot3-default.data");
    data[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let Err(e) = PerfFile::parse(&data) else {
        panic!("a file with attr_size {:#x} parsed", u64::MAX);
    };
    let text = e.to_string();
    assert!(text.contains("attr_size 0xffffffffffffffff"), "{text}");
}
