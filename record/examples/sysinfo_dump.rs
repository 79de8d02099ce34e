//! Prints what prec-record gathers for perf.data features, for comparison
//! with `perf report --header-only -I` and `perf buildid-list`.
//! Run: `cargo run -p prec-record --example sysinfo_dump`.

use prec_record::{buildid, proc_synth, sysinfo};

fn main() -> std::io::Result<()> {
    let u = sysinfo::uname_info()?;
    println!("# hostname : {}", u.hostname);
    println!("# os release : {}", u.os_release);
    println!("# arch : {}", u.arch);
    let n = sysinfo::nr_cpus()?;
    println!("# nrcpus online : {}", n.online);
    println!("# nrcpus avail : {}", n.available);
    println!("# cpudesc : {}", sysinfo::cpu_desc()?.unwrap_or_default());
    println!("# cpuid : {}", sysinfo::cpuid()?.unwrap_or_default());
    println!("# total memory : {} kB", sysinfo::total_mem_kb()?);
    let t = sysinfo::cpu_topology()?;
    for s in &t.core_siblings {
        println!("# sibling sockets : {s}");
    }
    for s in &t.die_siblings {
        println!("# sibling dies    : {s}");
    }
    for s in &t.thread_siblings {
        println!("# sibling threads : {s}");
    }
    for (i, c) in t.cpus.iter().enumerate() {
        println!(
            "# CPU {i}: Core ID {}, Die ID {}, Socket ID {}",
            c.core_id, c.die_id, c.socket_id
        );
    }
    for node in sysinfo::numa_nodes()? {
        println!(
            "# node{} meminfo  : total = {} kB, free = {} kB",
            node.node, node.mem_total_kb, node.mem_free_kb
        );
        println!("# node{} cpu list : {}", node.node, node.cpus);
    }
    let pmus: Vec<String> = sysinfo::pmu_mappings()?
        .iter()
        .map(|(t, n)| format!("{n} = {t}"))
        .collect();
    println!("# pmu mappings: {}", pmus.join(", "));
    println!("# CPU cache info:");
    for c in sysinfo::caches()? {
        println!("#  L{} {:<15} {:>7} [{}]", c.level, c.type_, c.size, c.map);
    }
    let (bs, nodes) = sysinfo::memory_topology()?;
    println!("# memory nodes (nr {}, block size {bs:#x}):", nodes.len());
    for n in nodes {
        println!(
            "#  node {} size {:#x} blocks {}",
            n.node,
            n.size,
            n.blocks.len()
        );
    }
    println!(
        "# max sample rate {}, paranoid {}, mlock_kb {}",
        sysinfo::max_sample_rate()?,
        sysinfo::perf_event_paranoid()?,
        sysinfo::perf_event_mlock_kb()?
    );
    let kt = proc_synth::kernel_text()?;
    println!("# _text {:#x} _etext {:#x}", kt.text, kt.etext);
    if let Some(id) = buildid::kernel_build_id()? {
        println!("{} [kernel.kallsyms]", buildid::to_hex(&id));
    }
    if let Some(id) = buildid::vdso_build_id()? {
        println!("{} [vdso]", buildid::to_hex(&id));
    }
    Ok(())
}
