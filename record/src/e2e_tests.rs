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

fn busy_child() -> crate::launch::SuspendedChild {
    Launched::spawn(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
    ])
    .expect("spawn sh")
}

/// task-clock, period 20 µs, per-thread (cpu −1, no inherit: the kernel
/// refuses to mmap inherited cpu −1 events).
fn fast_attr() -> sys::PerfEventAttr {
    let mut attr = EventSpec::parse("task-clock:u").unwrap().to_attr();
    attr.sample_period_or_freq = 20_000;
    attr.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    attr.set_flag(
        flags::DISABLED | flags::ENABLE_ON_EXEC | flags::COMM | flags::SAMPLE_ID_ALL,
        true,
    );
    attr
}

#[test]
fn small_ring_wraps_while_draining() {
    let child = busy_child();
    let mut attr = fast_attr();
    let fd = match sys::perf_event_open(&mut attr, child.pid(), -1, None, 0) {
        Ok(fd) => fd,
        Err(e) => {
            unavailable("perf_event_open", &e);
            return;
        }
    };
    // A second event on the same (cpu −1, same task) context redirected into
    // the first one's ring, as perf does per CPU.
    let mut attr2 = fast_attr();
    attr2.config = 0; // cpu-clock
    let fd2 = sys::perf_event_open(&mut attr2, child.pid(), -1, None, 0).expect("second event");
    let mut ring = RingBuffer::new(fd.as_fd(), 1).expect("mmap 1+1 pages");
    sys::ioc_set_output(fd2.as_fd(), Some(fd.as_fd())).expect("SET_OUTPUT same context");
    assert_eq!(ring.data_size(), sys::page_size() as u64);
    let ids = (
        sys::ioc_id(fd.as_fd()).unwrap(),
        sys::ioc_id(fd2.as_fd()).unwrap(),
    );
    assert_ne!(ids.0, ids.1);

    let mut running = child.start().expect("exec sh");
    let mut data = Vec::new();
    let status = loop {
        ring.read_available(&mut data);
        if let Some(st) = running.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    };
    ring.read_available(&mut data);
    assert!(status.success());
    let mut samples = 0;
    for rec in records(&data) {
        if rec.expect("records parse across the wrap").type_ == 9 {
            samples += 1;
        }
    }
    let mut lost = LostCounter::new();
    lost.scan(&data).unwrap();
    println!(
        "wrap test: {} bytes through a {} byte ring, {samples} samples, {lost:?}",
        data.len(),
        ring.data_size()
    );
    assert_eq!(ring.overruns(), 0);
    assert!(
        data.len() as u64 > 2 * ring.data_size(),
        "ring did not wrap"
    );
    assert!(samples > 0);
}

#[test]
fn full_ring_reports_lost() {
    let child = busy_child();
    let mut attr = fast_attr();
    let fd = match sys::perf_event_open(&mut attr, child.pid(), -1, None, 0) {
        Ok(fd) => fd,
        Err(e) => {
            unavailable("perf_event_open", &e);
            return;
        }
    };
    let mut ring = RingBuffer::new(fd.as_fd(), 1).expect("mmap");
    let mut running = child.start().expect("exec sh");
    // Drain once early so the kernel has room to write LOST afterwards.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut data = Vec::new();
    ring.read_available(&mut data);
    assert!(running.wait().unwrap().success());
    ring.read_available(&mut data);
    let mut lost = LostCounter::new();
    lost.scan(&data).unwrap();
    println!("full ring: {} bytes, {lost:?}", data.len());
    assert!(lost.lost_records > 0 && lost.lost_events > 0, "{lost:?}");
}
