//! A sample's memory data source (`PERF_SAMPLE_DATA_SRC`), described as
//! perf 6.1 describes it (`perf_script__meminfo_scnprintf`).
//!
//! The word packs, from bit 0: the operation (5 bits), the memory level
//! (14), the snoop (5), the lock (2), the data TLB (7), the level number
//! (4), remote (1), snoop extensions (2), blocking (3) and hops (3). The
//! kernel's `union perf_mem_data_src` in `include/uapi/linux/perf_event.h`
//! defines them.

/// One field of the word: `width` bits from bit `shift`.
fn field(data_src: u64, shift: u32, width: u32) -> u64 {
    (data_src >> shift) & ((1 << width) - 1)
}

/// The names of the set bits of `bits` (bit 0 names `names[0]`), joined
/// with " or ".
fn join_bits(out: &mut String, bits: u64, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        if bits & (1 << i) == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push_str(" or ");
        }
        out.push_str(name);
    }
}

fn operation(data_src: u64) -> &'static str {
    let op = field(data_src, 0, 5);
    match () {
        _ if op & 1 != 0 => "N/A",
        _ if op & 2 != 0 => "LOAD",
        _ if op & 4 != 0 => "STORE",
        _ if op & 8 != 0 => "PFETCH",
        _ if op & 16 != 0 => "EXEC",
        _ => "No",
    }
}

const LEVELS: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

const HOPS: [&str; 8] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
    "",
    "",
    "",
];

/// perf 6.1's `perf_mem__lvl_scnprintf`: the level bits (or with hops the
/// hops instead), then the level number, each after " or ".
pub(crate) fn level(data_src: u64) -> String {
    let bits = field(data_src, 5, 14);
    let (hit, miss) = (bits & 2 != 0, bits & 4 != 0);
    let mut out = String::new();
    if field(data_src, 37, 1) != 0 {
        out.push_str("Remote ");
    }
    let hops = field(data_src, 43, 3);
    let mut listed = String::new();
    if hops != 0 {
        out.push_str(HOPS[hops as usize]);
        out.push(' ');
    } else {
        join_bits(&mut listed, bits & !6, &LEVELS);
    }
    let printed = !listed.is_empty();
    out.push_str(&listed);
    let number = field(data_src, 33, 4);
    if number != 0 {
        if printed {
            out.push_str(" or ");
        }
        match number {
            9 => out.push_str("Ext Mem"),
            10 => out.push_str("I/O"),
            11 => out.push_str("Any cache"),
            12 => out.push_str("LFB/MAB"),
            13 => out.push_str("RAM"),
            14 => out.push_str("PMEM"),
            15 => out.push_str("N/A"),
            n => out.push_str(&format!("L{n}")),
        }
    }
    if out.is_empty() {
        out.push_str("N/A");
    }
    if hit {
        out.push_str(" hit");
    }
    if miss {
        out.push_str(" miss");
    }
    out
}

pub(crate) fn snoop(data_src: u64) -> String {
    let mut out = String::new();
    join_bits(
        &mut out,
        field(data_src, 19, 5),
        &["N/A", "None", "Hit", "Miss", "HitM"],
    );
    join_bits(&mut out, field(data_src, 38, 2), &["Fwd"]);
    if out.is_empty() {
        out.push_str("N/A");
    }
    out
}

pub(crate) fn tlb(data_src: u64) -> String {
    let bits = field(data_src, 26, 7);
    let mut out = String::new();
    join_bits(
        &mut out,
        bits & !6,
        &["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"],
    );
    if out.is_empty() {
        out.push_str("N/A");
    }
    if bits & 2 != 0 {
        out.push_str(" hit");
    }
    if bits & 4 != 0 {
        out.push_str(" miss");
    }
    out
}

pub(crate) fn lock(data_src: u64) -> &'static str {
    let bits = field(data_src, 24, 2);
    match () {
        _ if bits & 1 != 0 => "N/A",
        _ if bits & 2 != 0 => "Yes",
        _ => "No",
    }
}

pub(crate) fn blocked(data_src: u64) -> String {
    let bits = field(data_src, 40, 3);
    if bits == 0 || bits & 1 != 0 {
        return " N/A".into();
    }
    let mut out = String::new();
    if bits & 2 != 0 {
        out.push_str(" Data");
    }
    if bits & 4 != 0 {
        out.push_str(" Addr");
    }
    out
}

/// `|OP ...|LVL ...|SNP ...|TLB ...|LCK ...|BLK ...`, cut as perf's
/// 100-byte buffer cuts it.
pub fn describe(data_src: u64) -> String {
    let mut out = format!(
        "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK {}",
        operation(data_src),
        level(data_src),
        snoop(data_src),
        tlb(data_src),
        lock(data_src),
        blocked(data_src)
    );
    crate::truncate_bytes(&mut out, 99);
    out
}

/// perf script's `data_src` field before its padding: the word in hex,
/// then [`describe`], cut at 99 bytes.
pub fn script_field(data_src: u64) -> String {
    let mut out = format!("{data_src:16x} {}", describe(data_src));
    crate::truncate_bytes(&mut out, 99);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words and texts from `perf script` (6.1) on quipper's
    /// `perf.data.weight_struct` (Intel load-latency samples) and on a
    /// software event recorded with `-d` here.
    #[test]
    fn describes_like_perf() {
        let cases = [
            (
                0x11868100242,
                "|OP LOAD|LVL LFB/MAB or LFB/MAB hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A",
            ),
            (
                0x1026a100142,
                "|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK Yes|BLK  N/A",
            ),
            (
                0x10650100842,
                "|OP LOAD|LVL L3 or L3 hit|SNP None|TLB L2 miss|LCK No|BLK  N/A",
            ),
            (
                0x1e05080021,
                "|OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A",
            ),
            (0, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"),
        ];
        for (word, text) in cases {
            assert_eq!(describe(word), text, "{word:#x}");
        }
    }

    #[test]
    fn hops_replace_the_level_bits() {
        // Remote, hops "node, same socket", level L2 bit, level number RAM.
        let word = 1 << 37 | 2 << 43 | 0x20 << 5 | 2 << 5 | 13 << 33;
        assert!(describe(word).starts_with("|OP No|LVL Remote node, same socket RAM hit|"));
    }
}
