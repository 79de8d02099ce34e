//! End-to-end test with real syscalls: a sampling event on a gated child,
//! drained through the ring buffer.

use std::os::fd::{AsFd, OwnedFd};

use crate::events::EventSpec;
use crate::launch::Launched;
use crate::ring::{records, LostCounter, RingBuffer};
use crate::sys::{self, flags, sample};

/// Skips (returns true) when perf_event_open is unusable, unless CI=true.
fn unavailable(what: &str, err: &std::io::Error) -> bool {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what} failed under CI=true: {err}");
    }
    println!("skipping: {what} failed: {err}");
    true
}

#[test]
fn samples_comm_mmap2_from_launched_child() {
    let child = Launched::spawn(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
    ])
    .expect("spawn sh");
    let pid = child.pid();
    let cpus = sys::online_cpus().expect("online cpus");

    let spec = EventSpec::parse("task-clock").unwrap();
    let mut attr = spec.to_attr();
    attr.sample_period_or_freq = 4000;
    attr.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    attr.read_format = sys::read_format::ID | sys::read_format::LOST;
    attr.set_flag(
        flags::DISABLED
            | flags::INHERIT
            | flags::MMAP
            | flags::COMM
            | flags::FREQ
            | flags::ENABLE_ON_EXEC
            | flags::TASK
            | flags::SAMPLE_ID_ALL
            | flags::MMAP2
            | flags::COMM_EXEC,
        true,
    );
    // Work even for unprivileged users under paranoid 2.
    if sys::perf_event_open(&mut attr.clone(), pid, -1, None, 0).is_err() {
        attr.set_flag(flags::EXCLUDE_KERNEL, true);
    }

    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut rings = Vec::new();
    for &cpu in &cpus {
        match sys::perf_event_open(&mut attr, pid, cpu as i32, None, 0) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                if unavailable("perf_event_open", &e) {
                    return;
                }
            }
        }
    }
    for fd in &fds {
        rings.push(RingBuffer::new(fd.as_fd(), 16).expect("mmap ring"));
        assert_ne!(sys::ioc_id(fd.as_fd()).expect("IOC_ID"), 0);
    }
    let mut running = child.start().expect("exec sh");
    let status = running.wait().unwrap();
    assert!(status.success(), "{status:?}");

    let mut data = Vec::new();
    for r in &mut rings {
        let mut chunk = Vec::new();
        r.read_available(&mut chunk);
        assert_eq!(r.available(), 0);
        data.extend(chunk);
    }
    let (mut samples, mut comms, mut mmap2s) = (0, 0, 0);
    for rec in records(&data) {
        let rec = rec.expect("well-formed record");
        let b = rec.body();
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        match rec.type_ {
            // SAMPLE: ip u64, pid u32, tid u32, ...
            9 => {
                assert_eq!(u32_at(8) as i32, pid);
                samples += 1;
            }
            // COMM / MMAP2 start with pid u32, tid u32
            3 => {
                assert_eq!(u32_at(0) as i32, pid);
                comms += 1;
            }
            10 => {
                assert_eq!(u32_at(0) as i32, pid);
                mmap2s += 1;
            }
            _ => {}
        }
    }
    let mut lost = LostCounter::new();
    lost.scan(&data).unwrap();
    assert_eq!(lost.lost_events, 0);
    println!(
        "samples {samples}, comm {comms}, mmap2 {mmap2s}, bytes {}",
        data.len()
    );
    assert!(samples > 0, "no SAMPLE records");
    assert!(comms > 0, "no COMM records");
    assert!(mmap2s > 0, "no MMAP2 records");
    for fd in &fds {
        sys::ioc_disable(fd.as_fd()).unwrap();
        sys::ioc_enable(fd.as_fd()).unwrap();
    }
    if fds.len() > 1 {
        // Redirect into a ring that already exists on another fd of a
        // different CPU is refused by the kernel; same-CPU redirection is
        // what perf does. Just check the ioctl wrapper reports errors.
        assert!(sys::ioc_set_output(fds[1].as_fd(), Some(fds[0].as_fd())).is_err());
    }
}

#[test]
fn attr_bytes_layout() {
    let mut a = sys::PerfEventAttr::new(1, 0);
    a.sample_period_or_freq = 4000;
    a.set_precise_ip(3);
    a.sig_data = 0x1122334455667788;
    let b = a.as_bytes();
    assert_eq!(&b[0..8], &[1, 0, 0, 0, 128, 0, 0, 0]);
    assert_eq!(u64::from_ne_bytes(b[16..24].try_into().unwrap()), 4000);
    assert_eq!(u64::from_ne_bytes(b[40..48].try_into().unwrap()), 3 << 15);
    assert_eq!(
        u64::from_ne_bytes(b[120..128].try_into().unwrap()),
        0x1122334455667788
    );
    assert_eq!(a.precise_ip(), 3);
    assert_eq!(sys::parse_cpu_list("0-2,5\n").unwrap(), vec![0, 1, 2, 5]);
    assert!(sys::parse_cpu_list("3-1").is_err());
    assert!(sys::page_size() >= 4096);
}
