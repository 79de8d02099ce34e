//! Numbers from the kernel's `include/uapi/linux/perf_event.h` and perf's
//! `tools/perf/util/event.h` / `header.h`, as open newtypes: an unknown value
//! still round-trips and prints as a number.

use std::fmt;

/// A record type: the `type` field of `struct perf_event_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordType(pub u32);

impl RecordType {
    pub const MMAP: Self = Self(1);
    pub const LOST: Self = Self(2);
    pub const COMM: Self = Self(3);
    pub const EXIT: Self = Self(4);
    pub const THROTTLE: Self = Self(5);
    pub const UNTHROTTLE: Self = Self(6);
    pub const FORK: Self = Self(7);
    pub const READ: Self = Self(8);
    pub const SAMPLE: Self = Self(9);
    pub const MMAP2: Self = Self(10);
    pub const AUX: Self = Self(11);
    pub const ITRACE_START: Self = Self(12);
    pub const LOST_SAMPLES: Self = Self(13);
    pub const SWITCH: Self = Self(14);
    pub const SWITCH_CPU_WIDE: Self = Self(15);
    pub const NAMESPACES: Self = Self(16);
    pub const KSYMBOL: Self = Self(17);
    pub const BPF_EVENT: Self = Self(18);
    pub const CGROUP: Self = Self(19);
    pub const TEXT_POKE: Self = Self(20);
    pub const AUX_OUTPUT_HW_ID: Self = Self(21);
    // perf's own record types (>= 64), never produced by the kernel.
    pub const HEADER_ATTR: Self = Self(64);
    pub const HEADER_EVENT_TYPE: Self = Self(65);
    pub const HEADER_TRACING_DATA: Self = Self(66);
    pub const HEADER_BUILD_ID: Self = Self(67);
    pub const FINISHED_ROUND: Self = Self(68);
    pub const ID_INDEX: Self = Self(69);
    pub const AUXTRACE_INFO: Self = Self(70);
    pub const AUXTRACE: Self = Self(71);
    pub const AUXTRACE_ERROR: Self = Self(72);
    pub const THREAD_MAP: Self = Self(73);
    pub const CPU_MAP: Self = Self(74);
    pub const STAT_CONFIG: Self = Self(75);
    pub const STAT: Self = Self(76);
    pub const STAT_ROUND: Self = Self(77);
    pub const EVENT_UPDATE: Self = Self(78);
    pub const TIME_CONV: Self = Self(79);
    pub const HEADER_FEATURE: Self = Self(80);
    pub const COMPRESSED: Self = Self(81);
    pub const FINISHED_INIT: Self = Self(82);

    /// perf's name for the type, as `perf report -D` prints it after `PERF_RECORD_`.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "MMAP",
            2 => "LOST",
            3 => "COMM",
            4 => "EXIT",
            5 => "THROTTLE",
            6 => "UNTHROTTLE",
            7 => "FORK",
            8 => "READ",
            9 => "SAMPLE",
            10 => "MMAP2",
            11 => "AUX",
            12 => "ITRACE_START",
            13 => "LOST_SAMPLES",
            14 => "SWITCH",
            15 => "SWITCH_CPU_WIDE",
            16 => "NAMESPACES",
            17 => "KSYMBOL",
            18 => "BPF_EVENT",
            19 => "CGROUP",
            20 => "TEXT_POKE",
            21 => "AUX_OUTPUT_HW_ID",
            64 => "HEADER_ATTR",
            65 => "HEADER_EVENT_TYPE",
            66 => "HEADER_TRACING_DATA",
            67 => "HEADER_BUILD_ID",
            68 => "FINISHED_ROUND",
            69 => "ID_INDEX",
            70 => "AUXTRACE_INFO",
            71 => "AUXTRACE",
            72 => "AUXTRACE_ERROR",
            73 => "THREAD_MAP",
            74 => "CPU_MAP",
            75 => "STAT_CONFIG",
            76 => "STAT",
            77 => "STAT_ROUND",
            78 => "EVENT_UPDATE",
            79 => "TIME_CONV",
            80 => "FEATURE",
            81 => "COMPRESSED",
            82 => "FINISHED_INIT",
            _ => return None,
        })
    }

    /// True for types the kernel writes (they carry a sample_id trailer when
    /// the attr has sample_id_all).
    pub fn is_kernel(self) -> bool {
        self.0 < 64
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "PERF_RECORD_{n}"),
            None => write!(f, "PERF_RECORD_{}", self.0),
        }
    }
}

/// Bits of `perf_event_attr.sample_type` (`enum perf_event_sample_format`).
pub mod sample_type {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// Bits of `perf_event_attr.read_format`.
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `branch_sample_type` bits that change the sample layout.
pub mod branch_sample_type {
    pub const HW_INDEX: u64 = 1 << 17;
    pub const COUNTERS: u64 = 1 << 19;
}

/// The cpumode in the low three bits of a record header's `misc`.
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const CPUMODE_UNKNOWN: u16 = 0;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    pub const PROC_MAP_PARSE_TIMEOUT: u16 = 1 << 12;
    /// MMAP_DATA on MMAP/MMAP2, COMM_EXEC on COMM, FORK_EXEC on FORK, SWITCH_OUT on SWITCH.
    pub const MMAP_DATA: u16 = 1 << 13;
    pub const COMM_EXEC: u16 = 1 << 13;
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// EXACT_IP on SAMPLE, SWITCH_OUT_PREEMPT on SWITCH, MMAP_BUILD_ID on MMAP2.
    pub const EXACT_IP: u16 = 1 << 14;
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
}

/// Callchain context markers (`enum perf_callchain_context`): values at or
/// above `MAX` are markers that set the cpumode of the following entries.
pub mod callchain_context {
    pub const HV: u64 = (-32i64) as u64;
    pub const KERNEL: u64 = (-128i64) as u64;
    pub const USER: u64 = (-512i64) as u64;
    pub const GUEST: u64 = (-2048i64) as u64;
    pub const GUEST_KERNEL: u64 = (-2176i64) as u64;
    pub const GUEST_USER: u64 = (-2560i64) as u64;
    pub const MAX: u64 = (-4095i64) as u64;
}

/// A feature section number (bit in the header's feature bitmap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeatureId(pub u32);

impl FeatureId {
    pub const TRACING_DATA: Self = Self(1);
    pub const BUILD_ID: Self = Self(2);
    pub const HOSTNAME: Self = Self(3);
    pub const OSRELEASE: Self = Self(4);
    pub const VERSION: Self = Self(5);
    pub const ARCH: Self = Self(6);
    pub const NRCPUS: Self = Self(7);
    pub const CPUDESC: Self = Self(8);
    pub const CPUID: Self = Self(9);
    pub const TOTAL_MEM: Self = Self(10);
    pub const CMDLINE: Self = Self(11);
    pub const EVENT_DESC: Self = Self(12);
    pub const CPU_TOPOLOGY: Self = Self(13);
    pub const NUMA_TOPOLOGY: Self = Self(14);
    pub const BRANCH_STACK: Self = Self(15);
    pub const PMU_MAPPINGS: Self = Self(16);
    pub const GROUP_DESC: Self = Self(17);
    pub const AUXTRACE: Self = Self(18);
    pub const STAT: Self = Self(19);
    pub const CACHE: Self = Self(20);
    pub const SAMPLE_TIME: Self = Self(21);
    pub const MEM_TOPOLOGY: Self = Self(22);
    pub const CLOCKID: Self = Self(23);
    pub const DIR_FORMAT: Self = Self(24);
    pub const BPF_PROG_INFO: Self = Self(25);
    pub const BPF_BTF: Self = Self(26);
    pub const COMPRESSED: Self = Self(27);
    pub const CPU_PMU_CAPS: Self = Self(28);
    pub const CLOCK_DATA: Self = Self(29);
    pub const HYBRID_TOPOLOGY: Self = Self(30);
    pub const PMU_CAPS: Self = Self(31);
    /// perf 6.1's HEADER_LAST_FEATURE: the end marker of pipe-mode features.
    pub const LAST_FEATURE_6_1: Self = Self(32);

    /// perf's name of the feature (as in `--header-only -I`).
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "tracing_data",
            2 => "build_id",
            3 => "hostname",
            4 => "osrelease",
            5 => "version",
            6 => "arch",
            7 => "nrcpus",
            8 => "cpudesc",
            9 => "cpuid",
            10 => "total_mem",
            11 => "cmdline",
            12 => "event_desc",
            13 => "cpu_topology",
            14 => "numa_topology",
            15 => "branch_stack",
            16 => "pmu_mappings",
            17 => "group_desc",
            18 => "auxtrace",
            19 => "stat",
            20 => "cache",
            21 => "sample_time",
            22 => "mem_topology",
            23 => "clockid",
            24 => "dir_format",
            25 => "bpf_prog_info",
            26 => "bpf_btf",
            27 => "compressed",
            28 => "cpu_pmu_caps",
            29 => "clock_data",
            30 => "hybrid_topology",
            31 => "pmu_caps",
            _ => return None,
        })
    }
}

impl fmt::Display for FeatureId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "feature {}", self.0),
        }
    }
}
