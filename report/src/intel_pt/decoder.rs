//! The Intel PT decoder's state machine, as perf 6.1's intel-pt-decoder
//! runs it when it cannot read the traced code.
//!
//! perf walks the traced binaries instruction by instruction between
//! packets. prec does not decode x86 instructions: every walk fails the way
//! perf's fails when the binary is absent (a recording from another
//! machine, the quipper files): "Failed to get instruction", twice per
//! binary, then silently (perf marks the binary's data unreadable). What is
//! left is what perf gets from the packets alone: PSB events, core-to-bus
//! ratio changes, asynchronous branches (a FUP at the current ip followed
//! by a TIP), trace starts, timestamps, and the errors. perf's decisions
//! are kept step for step, so that these come out as perf's do.

use super::packet::{self, Context, Kind, Packet, PSB};

/// `intel_pt_state.type` bits.
pub(crate) mod kind {
    pub const BRANCH: u32 = 1 << 0;
    pub const INSTRUCTION: u32 = 1 << 1;
    pub const TRANSACTION: u32 = 1 << 2;
    pub const PTW: u32 = 1 << 3;
    pub const MWAIT_OP: u32 = 1 << 4;
    pub const PWR_ENTRY: u32 = 1 << 5;
    pub const EX_STOP: u32 = 1 << 6;
    pub const PWR_EXIT: u32 = 1 << 7;
    pub const CBR_CHG: u32 = 1 << 8;
    pub const TRACE_BEGIN: u32 = 1 << 9;
    pub const TRACE_END: u32 = 1 << 10;
    pub const BLK_ITEMS: u32 = 1 << 11;
    pub const PSB_EVT: u32 = 1 << 12;
}

/// `intel_pt_state.flags` bits.
pub(crate) mod flag {
    pub const IN_TX: u32 = 1 << 0;
    pub const ABORT_TX: u32 = 1 << 1;
    pub const ASYNC: u32 = 1 << 2;
    pub const FUP_IP: u32 = 1 << 3;
}

/// perf's INTEL_PT_ERR_* codes, as its error events carry them.
pub(crate) mod code {
    pub const INTERN: u32 = 2;
    pub const BADPKT: u32 = 3;
    pub const NODATA: u32 = 4;
    pub const NOINSN: u32 = 5;
    pub const MISMAT: u32 = 6;
    pub const OVR: u32 = 7;
}

/// Why the code at an ip could not be walked (perf's walk callback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WalkError {
    /// No map, or no way to read it (perf's -EINVAL): an error event.
    Invalid,
    /// The binary was already found unreadable (perf's -ENOENT): the
    /// decoder resynchronises without an error event.
    Unreadable,
}

/// What the decoder asks of the traced program.
pub(crate) trait Code {
    /// Walking from `ip`, in guest context when `nr`.
    fn walk_failure(&mut self, ip: u64, nr: bool) -> WalkError;
}

/// One buffer of trace data, in queue order.
#[derive(Clone, Copy)]
pub(crate) struct Buffer<'a> {
    pub data: &'a [u8],
    pub reference: u64,
    /// perf's buffer number plus one, given to the first buffer.
    pub trace_nr: u64,
    /// Whether it continues the previous buffer.
    pub consecutive: bool,
}

/// What [`Decoder::decode`] reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct State {
    pub kind: u32,
    pub flags: u32,
    pub from_ip: u64,
    pub to_ip: u64,
    pub timestamp: u64,
    pub est_timestamp: u64,
    pub trace_nr: u64,
    pub psb_offset: u64,
    pub cbr: u32,
    pub cbr_payload: u64,
    /// An INTEL_PT_ERR code, 0 for none.
    pub err: u32,
    pub from_nr: bool,
    pub to_nr: bool,
}

/// The decoder's parameters, from the AUXTRACE_INFO record and the
/// intel_pt event's config.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Params {
    pub branch_enable: bool,
    pub mtc_shift: u32,
    pub tsc_ctc_ratio_n: u32,
    pub tsc_ctc_ratio_d: u32,
    pub max_non_turbo_ratio: u32,
}

/// perf's internal error numbers, which steer the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fail {
    /// -ENOLINK: new data, or a silent resync: decode again.
    NoLink,
    /// -EAGAIN.
    Again,
    NoData,
    BadPacket,
    NoInsn,
    Mismatch,
    Overflow,
    Internal,
}

impl Fail {
    fn code(self) -> u32 {
        match self {
            Fail::NoData => code::NODATA,
            Fail::BadPacket => code::BADPKT,
            Fail::NoInsn => code::NOINSN,
            Fail::Mismatch => code::MISMAT,
            Fail::Overflow => code::OVR,
            Fail::Internal | Fail::NoLink | Fail::Again => code::INTERN,
        }
    }
}

type Step = Result<(), Fail>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktState {
    NoPsb,
    NoIp,
    ErrResync,
    InSync,
    Tnt,
    Tip,
    TipPgd,
    Fup,
    FupNoTip,
    FupInPsb,
}

impl PktState {
    /// perf's intel_pt_sample_time.
    fn sample_time(self) -> bool {
        !matches!(
            self,
            PktState::Tnt
                | PktState::Tip
                | PktState::TipPgd
                | PktState::Fup
                | PktState::FupNoTip
                | PktState::FupInPsb
        )
    }
}

const TSC_SLIP: u64 = 0x10000;

pub(crate) struct Decoder<'a, C: Code> {
    code: C,
    buffers: Vec<Buffer<'a>>,
    /// The next buffer to read.
    next_buffer: usize,
    /// The current buffer's reference timestamp.
    buf_timestamp: u64,
    params: Params,
    tsc_ctc_mult: u32,
    ctc_rem_mask: u32,
    max_non_turbo_ratio_fp: f64,

    data: &'a [u8],
    /// Start of the current packet in `data`.
    at: usize,
    pos: u64,
    pkt_step: usize,
    packet: Packet,
    ctx: Context,
    last_packet_type: Kind,

    pkt_state: PktState,
    state: State,
    pge: bool,
    have_tma: bool,
    have_cyc: bool,
    fixup_last_mtc: bool,
    have_last_ip: bool,
    in_psb: bool,
    last_ip: u64,
    ip: u64,
    psb_ip: u64,
    pip_payload: u64,
    nr: bool,
    next_nr: bool,
    timestamp: u64,
    tsc_timestamp: u64,
    ref_timestamp: u64,
    sample_timestamp: u64,
    ctc_timestamp: u64,
    ctc_delta: u64,
    cycle_cnt: u64,
    cyc_ref_timestamp: u64,
    last_mtc: u32,
    cbr: u32,
    cbr_seen: u32,
    cbr_payload: u64,
    cbr_cyc_to_tsc: f64,
    calc_cyc_to_tsc: f64,
    have_calc_cyc_to_tsc: bool,
    tx_flags: u32,
    fup_tx_flags: u32,
    set_fup_tx_flags: bool,
    set_fup_ptw: bool,
    set_fup_mwait: bool,
    set_fup_pwre: bool,
    set_fup_exstop: bool,
    set_fup_bep: bool,
    tnt: Packet,
    overflow: bool,
}

impl<'a, C: Code> Decoder<'a, C> {
    pub fn new(params: Params, buffers: Vec<Buffer<'a>>, code: C) -> Self {
        let mut params = params;
        // The MTC period is a 4-bit field; more is a corrupt file.
        params.mtc_shift = params.mtc_shift.min(15);
        if params.tsc_ctc_ratio_n == 0 {
            params.tsc_ctc_ratio_d = 0;
        }
        let tsc_ctc_mult = match params.tsc_ctc_ratio_d {
            0 => 0,
            d if params.tsc_ctc_ratio_n.is_multiple_of(d) => params.tsc_ctc_ratio_n / d,
            _ => 0,
        };
        Decoder {
            code,
            buffers,
            next_buffer: 0,
            buf_timestamp: 0,
            tsc_ctc_mult,
            ctc_rem_mask: (1u32 << params.mtc_shift.min(31)) - 1,
            max_non_turbo_ratio_fp: f64::from(params.max_non_turbo_ratio),
            params,
            data: &[],
            at: 0,
            pos: 0,
            pkt_step: 0,
            packet: Packet::default(),
            ctx: Context::None,
            last_packet_type: Kind::Bad,
            pkt_state: PktState::NoPsb,
            state: State::default(),
            pge: false,
            have_tma: false,
            have_cyc: false,
            fixup_last_mtc: false,
            have_last_ip: false,
            in_psb: false,
            last_ip: 0,
            ip: 0,
            psb_ip: 0,
            pip_payload: 0,
            nr: false,
            next_nr: false,
            timestamp: 0,
            tsc_timestamp: 0,
            ref_timestamp: 0,
            sample_timestamp: 0,
            ctc_timestamp: 0,
            ctc_delta: 0,
            cycle_cnt: 0,
            cyc_ref_timestamp: 0,
            last_mtc: 0,
            cbr: 0,
            cbr_seen: 0,
            cbr_payload: 0,
            cbr_cyc_to_tsc: 0.0,
            calc_cyc_to_tsc: 0.0,
            have_calc_cyc_to_tsc: false,
            tx_flags: 0,
            fup_tx_flags: 0,
            set_fup_tx_flags: false,
            set_fup_ptw: false,
            set_fup_mwait: false,
            set_fup_pwre: false,
            set_fup_exstop: false,
            set_fup_bep: false,
            tnt: Packet::default(),
            overflow: false,
        }
    }

    pub fn code(&mut self) -> &mut C {
        &mut self.code
    }

    // ---- buffers and packets ----

    fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    fn get_data(&mut self, reposition: bool) -> Step {
        self.pkt_step = 0;
        let Some(&Buffer {
            data,
            reference,
            trace_nr,
            consecutive,
        }) = self.buffers.get(self.next_buffer)
        else {
            self.data = &[];
            self.at = 0;
            return Err(Fail::NoData);
        };
        self.next_buffer += 1;
        self.data = data;
        self.at = 0;
        if data.is_empty() {
            return Err(Fail::NoData);
        }
        self.buf_timestamp = reference;
        if !consecutive || reposition {
            self.reposition();
            self.ref_timestamp = reference;
            self.state.trace_nr = trace_nr;
            return Err(Fail::NoLink);
        }
        Ok(())
    }

    fn reposition(&mut self) {
        self.ip = 0;
        self.pkt_state = PktState::NoPsb;
        self.timestamp = 0;
        self.have_tma = false;
    }

    /// perf's intel_pt_fast_forward: moves to the last PSB before
    /// `timestamp` (TSC), in the last buffer that starts before it.
    pub fn fast_forward(&mut self, timestamp: u64) {
        let mut buf_timestamp = 0;
        for b in &self.buffers[self.next_buffer..] {
            let Some(psb) = find_psb(b.data, 0) else {
                continue;
            };
            let Some(tsc) = psb_tsc(&b.data[psb..]) else {
                continue;
            };
            if eight_byte_tsc(tsc, b.reference) < timestamp {
                buf_timestamp = b.reference;
            } else {
                break;
            }
        }
        if buf_timestamp != 0 {
            loop {
                self.pos += self.remaining() as u64;
                self.at = self.data.len();
                match self.get_data(true) {
                    Ok(()) | Err(Fail::NoLink) => {}
                    Err(_) => return,
                }
                if self.buf_timestamp == buf_timestamp {
                    break;
                }
            }
        }
        let mut at = match find_psb(self.data, self.at) {
            Some(at) => at,
            None => return,
        };
        while let Some(tsc) = psb_tsc(&self.data[at..]) {
            if eight_byte_tsc(tsc, self.buf_timestamp) >= timestamp {
                break;
            }
            self.pos += (at - self.at) as u64;
            self.at = at;
            self.reposition();
            match find_psb(self.data, at + 1) {
                Some(next) => at = next,
                None => break,
            }
        }
    }

    fn bad_packet(&mut self) -> Fail {
        self.tx_flags = 0;
        self.have_tma = false;
        self.pkt_step = 1;
        if self.pkt_state != PktState::NoPsb {
            // perf's INTEL_PT_STATE_ERR1: the state stays.
        }
        Fail::BadPacket
    }

    fn next_packet(&mut self) -> Step {
        self.last_packet_type = self.packet.kind;
        loop {
            self.pos += self.pkt_step as u64;
            self.at += self.pkt_step;
            if self.remaining() == 0 {
                self.get_data(false)?;
            }
            match packet::next(&self.data[self.at..], &mut self.ctx) {
                Ok((p, n)) => {
                    self.packet = p;
                    self.pkt_step = n;
                }
                Err(_) => {
                    self.packet = Packet::default();
                    return Err(self.bad_packet());
                }
            }
            if self.packet.kind != Kind::Pad {
                return Ok(());
            }
        }
    }

    /// Calls `cb` with the packets after the current one in this buffer
    /// (PADs skipped) until it returns true or the buffer ends.
    fn lookahead(&self, mut cb: impl FnMut(&Packet) -> bool) {
        let mut at = self.at + self.pkt_step;
        let mut ctx = self.ctx;
        while at < self.data.len() {
            let Ok((p, n)) = packet::next(&self.data[at..], &mut ctx) else {
                return;
            };
            at += n;
            if p.kind == Kind::Pad {
                continue;
            }
            if cb(&p) {
                return;
            }
        }
    }

    fn scan_for_psb(&mut self) -> Step {
        loop {
            if self.remaining() == 0 {
                self.get_data(false)?;
            }
            let rest = &self.data[self.at..];
            match rest.windows(PSB.len()).position(|w| w == PSB) {
                Some(i) => {
                    self.pkt_step = i;
                    return self.next_packet();
                }
                None => {
                    self.pos += rest.len() as u64;
                    self.at = self.data.len();
                    self.pkt_step = 0;
                }
            }
        }
    }

    // ---- ips ----

    fn calc_ip(&self) -> u64 {
        let p = &self.packet;
        let last = self.last_ip;
        match p.count {
            1 => (last & 0xffff_ffff_ffff_0000) | p.payload,
            2 => (last & 0xffff_ffff_0000_0000) | p.payload,
            3 => {
                if p.payload & 0x8000_0000_0000 != 0 {
                    p.payload | 0xffff_0000_0000_0000
                } else {
                    p.payload
                }
            }
            4 => (last & 0xffff_0000_0000_0000) | p.payload,
            6 => p.payload,
            _ => 0,
        }
    }

    fn set_last_ip(&mut self) {
        self.last_ip = self.calc_ip();
        self.have_last_ip = true;
    }

    fn set_ip(&mut self) {
        self.set_last_ip();
        self.ip = self.last_ip;
    }

    fn have_ip(&self) -> bool {
        self.packet.count != 0
            && (self.have_last_ip || self.packet.count == 3 || self.packet.count == 6)
    }

    fn update_pip(&mut self) {
        self.pip_payload = self.packet.payload;
    }

    fn update_nr(&mut self) {
        self.next_nr = self.pip_payload & 1 != 0;
    }

    fn set_nr(&mut self) {
        self.nr = self.pip_payload & 1 != 0;
        self.next_nr = self.nr;
    }

    fn set_pip(&mut self) {
        self.update_pip();
        self.set_nr();
    }

    // ---- timing ----

    fn ctc_to_tsc(&self, ctc: u64) -> u64 {
        if self.tsc_ctc_mult != 0 {
            ctc.wrapping_mul(u64::from(self.tsc_ctc_mult))
        } else {
            // perf's multdiv.
            let d = u64::from(self.params.tsc_ctc_ratio_d);
            let n = u64::from(self.params.tsc_ctc_ratio_n);
            match (ctc.checked_div(d), ctc.checked_rem(d)) {
                (Some(q), Some(r)) => q.wrapping_mul(n) + (r * n) / d,
                _ => 0,
            }
        }
    }

    fn calc_tsc_timestamp(&mut self) {
        self.have_tma = false;
        if self.ref_timestamp != 0 {
            let t = eight_byte_tsc(self.packet.payload, self.ref_timestamp);
            self.tsc_timestamp = t;
            self.timestamp = t;
            self.ref_timestamp = 0;
        } else if self.timestamp != 0 {
            let mut t = self.packet.payload | (self.timestamp & (0xff << 56));
            self.tsc_timestamp = t;
            if t < self.timestamp && self.timestamp - t < TSC_SLIP {
                t = self.timestamp;
            }
            if t < self.timestamp {
                // A wrap-around only where the buffer's time allows one.
                if self.buf_timestamp == 0 || t.wrapping_add(1 << 56) < self.buf_timestamp {
                    t = t.wrapping_add(1 << 56);
                    self.tsc_timestamp = t;
                } else {
                    t = self.timestamp;
                }
            }
            self.timestamp = t;
        }
        if self.last_packet_type == Kind::Cyc {
            self.cyc_ref_timestamp = self.timestamp;
            self.cycle_cnt = 0;
            // perf measures the ratio only from an MTC.
            self.have_calc_cyc_to_tsc = false;
        }
    }

    fn calc_tma(&mut self) {
        if self.params.tsc_ctc_ratio_d == 0 {
            return;
        }
        let ctc = self.packet.payload as u32;
        let fc = u64::from(self.packet.count);
        let ctc_rem = ctc & self.ctc_rem_mask;
        self.last_mtc = (ctc >> self.params.mtc_shift) & 0xff;
        self.ctc_timestamp = self
            .tsc_timestamp
            .wrapping_sub(fc)
            .wrapping_sub(self.ctc_to_tsc(u64::from(ctc_rem)));
        self.ctc_delta = 0;
        self.have_tma = true;
        self.fixup_last_mtc = true;
    }

    fn calc_mtc_timestamp(&mut self) {
        if !self.have_tma {
            return;
        }
        let mtc = self.packet.payload as u32;
        if self.params.mtc_shift > 8 && self.fixup_last_mtc {
            self.fixup_last_mtc = false;
            self.last_mtc = fixup_mtc(mtc, self.params.mtc_shift, self.last_mtc);
        }
        let delta = if mtc > self.last_mtc {
            mtc - self.last_mtc
        } else {
            mtc + 256 - self.last_mtc
        };
        self.ctc_delta = self
            .ctc_delta
            .wrapping_add(u64::from(delta) << self.params.mtc_shift);
        let t = self
            .ctc_timestamp
            .wrapping_add(self.ctc_to_tsc(self.ctc_delta));
        if t >= self.timestamp {
            self.timestamp = t;
        }
        self.last_mtc = mtc;
        if self.last_packet_type == Kind::Cyc {
            self.cyc_ref_timestamp = self.timestamp;
            self.cycle_cnt = 0;
            self.have_calc_cyc_to_tsc = false;
            self.calc_cyc_to_tsc();
        }
    }

    /// perf's intel_pt_calc_cyc_to_tsc after an MTC: the TSC ticks per
    /// cycle measured up to the next MTC, where CYC packets lead to it.
    fn calc_cyc_to_tsc(&mut self) {
        let mut cycle_cnt = 0u64;
        let mut cbr = 0u32;
        let mut cbr_cyc_to_tsc = 0.0f64;
        let mut last_mtc = self.last_mtc;
        let mut ctc_delta = self.ctc_delta;
        let mut timestamp = self.timestamp;
        let mut fixup_last_mtc = self.fixup_last_mtc;
        let have_tma = self.have_tma;
        let mut last_type = self.last_packet_type;
        let mut measured = None;
        let (shift, ratio) = (self.params.mtc_shift, self.max_non_turbo_ratio_fp);
        self.lookahead(|p| {
            let prev = last_type;
            last_type = p.kind;
            let mtc_time = match p.kind {
                Kind::Mtc => {
                    if !have_tma {
                        return false;
                    }
                    let mtc = p.payload as u32;
                    if shift > 8 && fixup_last_mtc {
                        fixup_last_mtc = false;
                        last_mtc = fixup_mtc(mtc, shift, last_mtc);
                    }
                    let delta = if mtc > last_mtc {
                        mtc - last_mtc
                    } else {
                        mtc + 256 - last_mtc
                    };
                    ctc_delta = ctc_delta.wrapping_add(u64::from(delta) << shift);
                    last_mtc = mtc;
                    let t = self.ctc_timestamp.wrapping_add(self.ctc_to_tsc(ctc_delta));
                    if t < timestamp {
                        return true;
                    }
                    if prev != Kind::Cyc {
                        timestamp = t;
                        return false;
                    }
                    t
                }
                Kind::Cyc => {
                    cycle_cnt = cycle_cnt.wrapping_add(p.payload);
                    return false;
                }
                Kind::Cbr => {
                    let c = p.payload as u32;
                    if cbr != 0 && cbr != c {
                        return true;
                    }
                    cbr = c;
                    cbr_cyc_to_tsc = if c != 0 { ratio / f64::from(c) } else { 0.0 };
                    return false;
                }
                Kind::Tnt
                | Kind::TipPge
                | Kind::Tip
                | Kind::Fup
                | Kind::Psb
                | Kind::Pip
                | Kind::ModeExec
                | Kind::ModeTsx
                | Kind::Psbend
                | Kind::Pad
                | Kind::Vmcs
                | Kind::Mnt
                | Kind::Ptwrite
                | Kind::PtwriteIp
                | Kind::Bbp
                | Kind::Bip
                | Kind::Bep
                | Kind::BepIp => return false,
                // A TSC or TMA ends it (perf measures from MTCs only).
                _ => return true,
            };
            if cbr == 0 && self.cbr != 0 {
                cbr = self.cbr;
                cbr_cyc_to_tsc = self.cbr_cyc_to_tsc;
            }
            if cycle_cnt == 0 {
                return true;
            }
            let cyc_to_tsc = mtc_time.wrapping_sub(self.timestamp) as f64 / cycle_cnt as f64;
            if cbr != 0 && cyc_to_tsc > cbr_cyc_to_tsc && cyc_to_tsc / cbr_cyc_to_tsc > 1.25 {
                return true;
            }
            measured = Some(cyc_to_tsc);
            true
        });
        if let Some(m) = measured {
            self.calc_cyc_to_tsc = m;
            self.have_calc_cyc_to_tsc = true;
        }
    }

    fn calc_cbr(&mut self) {
        let cbr = (self.packet.payload & 0xff) as u32;
        self.cbr_payload = self.packet.payload;
        if self.cbr == cbr {
            return;
        }
        self.cbr = cbr;
        self.cbr_cyc_to_tsc = self.max_non_turbo_ratio_fp / f64::from(cbr);
        // perf counts cycles from the change ("CYC timestamps after
        // standalone CBR").
        self.cyc_ref_timestamp = self.timestamp;
        self.cycle_cnt = 0;
    }

    fn calc_cyc_timestamp(&mut self) {
        self.have_cyc = true;
        self.cycle_cnt = self.cycle_cnt.wrapping_add(self.packet.payload);
        if self.cyc_ref_timestamp == 0 {
            return;
        }
        let ratio = if self.have_calc_cyc_to_tsc {
            self.calc_cyc_to_tsc
        } else if self.cbr != 0 {
            self.cbr_cyc_to_tsc
        } else {
            return;
        };
        // In floating point, as perf's C promotes it.
        let t = (self.cyc_ref_timestamp as f64 + self.cycle_cnt as f64 * ratio) as u64;
        if t >= self.timestamp {
            self.timestamp = t;
        }
    }

    /// The timing packets every walk but the FUP's takes in its stride;
    /// false for other packets.
    fn timing_packet(&mut self) -> bool {
        match self.packet.kind {
            Kind::Mtc => self.calc_mtc_timestamp(),
            Kind::Tsc => self.calc_tsc_timestamp(),
            Kind::Tma => self.calc_tma(),
            Kind::Cyc => self.calc_cyc_timestamp(),
            _ => return false,
        }
        true
    }

    fn update_sample_time(&mut self) {
        self.sample_timestamp = self.timestamp;
    }

    fn overflow_error(&mut self) -> Fail {
        self.tx_flags = 0;
        self.set_nr();
        self.pkt_state = PktState::ErrResync;
        self.overflow = true;
        Fail::Overflow
    }

    // ---- walking ----

    /// perf's intel_pt_walk_insn with a walk that reads no code: it only
    /// succeeds where it starts at `to_ip` already.
    fn walk_insn(&mut self, to_ip: u64) -> Step {
        if to_ip != 0 && self.ip == to_ip {
            return Err(Fail::Again);
        }
        let failure = self.code.walk_failure(self.ip, self.state.to_nr);
        self.pkt_state = PktState::NoIp;
        match failure {
            WalkError::Unreadable => Err(Fail::NoLink),
            WalkError::Invalid => Err(Fail::NoInsn),
        }
    }

    fn fup_event(&mut self) -> bool {
        let mut ret = false;
        if self.set_fup_tx_flags {
            self.set_fup_tx_flags = false;
            self.tx_flags = self.fup_tx_flags;
            self.state.kind = kind::TRANSACTION;
            if self.fup_tx_flags & flag::ABORT_TX != 0 {
                self.state.kind |= kind::BRANCH;
            }
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            self.state.flags = self.fup_tx_flags;
            return true;
        }
        if self.set_fup_ptw {
            self.set_fup_ptw = false;
            self.state.kind = kind::PTW;
            self.state.flags |= flag::FUP_IP;
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            return true;
        }
        if self.set_fup_mwait {
            self.set_fup_mwait = false;
            self.state.kind = kind::MWAIT_OP;
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            ret = true;
        }
        if self.set_fup_pwre {
            self.set_fup_pwre = false;
            self.state.kind |= kind::PWR_ENTRY;
            self.state.kind &= !kind::BRANCH;
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            ret = true;
        }
        if self.set_fup_exstop {
            self.set_fup_exstop = false;
            self.state.kind |= kind::EX_STOP;
            self.state.kind &= !kind::BRANCH;
            self.state.flags |= flag::FUP_IP;
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            ret = true;
        }
        if self.set_fup_bep {
            self.set_fup_bep = false;
            self.state.kind |= kind::BLK_ITEMS;
            self.state.kind &= !kind::BRANCH;
            self.state.from_ip = self.ip;
            self.state.to_ip = 0;
            ret = true;
        }
        ret
    }

    fn walk_fup(&mut self) -> Step {
        let to = self.last_ip;
        match self.walk_insn(to) {
            Err(Fail::Again) => {
                // A FUP event returns here unless a TIP follows.
                let no_tip = self.pkt_state != PktState::Fup;
                self.pkt_state = PktState::InSync;
                if self.fup_event() && no_tip {
                    return Ok(());
                }
                Err(Fail::Again)
            }
            Err(e) => {
                self.set_fup_tx_flags = false;
                Err(e)
            }
            Ok(()) => Err(Fail::Internal),
        }
    }

    fn walk_tip(&mut self) -> Step {
        match self.walk_insn(0) {
            Err(e) => Err(e),
            Ok(()) => Err(Fail::Internal),
        }
    }

    fn walk_tnt(&mut self) -> Step {
        self.walk_insn(0)
    }

    /// A state of `kind` at the current ip (perf's events that carry no
    /// branch).
    fn event_here(&mut self, kind: u32) -> Step {
        self.state.kind = kind;
        self.state.from_ip = self.ip;
        self.state.to_ip = 0;
        Ok(())
    }

    /// Reads the packet after one that announces a FUP; whether it is one.
    fn fup_follows(&mut self) -> Result<bool, Fail> {
        self.next_packet()?;
        Ok(self.packet.kind == Kind::Fup)
    }

    fn mode_tsx(&mut self, no_tip: &mut bool) -> Step {
        let fup_tx_flags = (self.packet.payload as u32) & (flag::IN_TX | flag::ABORT_TX);
        self.next_packet()?;
        if self.packet.kind == Kind::Fup {
            self.fup_tx_flags = fup_tx_flags;
            self.set_fup_tx_flags = true;
            if fup_tx_flags & flag::ABORT_TX == 0 {
                *no_tip = true;
            }
        } else {
            self.tx_flags = (self.packet.payload as u32) & flag::IN_TX;
        }
        Ok(())
    }

    fn walk_fup_tip(&mut self) -> Step {
        if self.tx_flags & flag::ABORT_TX != 0 {
            self.tx_flags = 0;
            self.state.flags &= !flag::IN_TX;
            self.state.flags |= flag::ABORT_TX;
        } else {
            self.state.flags |= flag::ASYNC;
        }
        loop {
            self.next_packet()?;
            match self.packet.kind {
                Kind::Tnt
                | Kind::Fup
                | Kind::TraceStop
                | Kind::Psb
                | Kind::Tsc
                | Kind::Tma
                | Kind::ModeTsx
                | Kind::Bad
                | Kind::Psbend
                | Kind::Ptwrite
                | Kind::PtwriteIp
                | Kind::Exstop
                | Kind::ExstopIp
                | Kind::Mwait
                | Kind::Pwre
                | Kind::Pwrx
                | Kind::Bbp
                | Kind::Bip
                | Kind::Bep
                | Kind::BepIp
                | Kind::Cfe
                | Kind::CfeIp
                | Kind::Evd => {
                    self.pkt_state = PktState::ErrResync;
                    self.pkt_step = 0;
                    return Err(Fail::Mismatch);
                }
                Kind::Cbr => self.calc_cbr(),
                Kind::Ovf => return Err(self.overflow_error()),
                Kind::TipPgd => {
                    self.state.from_ip = self.ip;
                    if self.packet.count == 0 {
                        self.state.to_ip = 0;
                    } else {
                        self.set_ip();
                        self.state.to_ip = self.ip;
                    }
                    self.pge = false;
                    self.state.kind |= kind::TRACE_END;
                    self.update_nr();
                    return Ok(());
                }
                Kind::TipPge => {
                    self.pge = true;
                    self.state.from_ip = 0;
                    if self.packet.count == 0 {
                        self.state.to_ip = 0;
                    } else {
                        self.set_ip();
                        self.state.to_ip = self.ip;
                    }
                    self.state.kind |= kind::TRACE_BEGIN;
                    self.set_nr();
                    return Ok(());
                }
                Kind::Tip => {
                    self.state.from_ip = self.ip;
                    if self.packet.count == 0 {
                        self.state.to_ip = 0;
                    } else {
                        self.set_ip();
                        self.state.to_ip = self.ip;
                    }
                    self.update_nr();
                    return Ok(());
                }
                Kind::Pip => self.update_pip(),
                Kind::Mtc => self.calc_mtc_timestamp(),
                Kind::Cyc => self.calc_cyc_timestamp(),
                Kind::ModeExec | Kind::Vmcs | Kind::Mnt | Kind::Pad => {}
            }
        }
    }

    // ---- PSB+ ----

    /// Runs `walk` over a PSB+ with `in_psb` set.
    fn inside_psb(&mut self, walk: fn(&mut Self) -> Step) -> Step {
        self.in_psb = true;
        let r = walk(self);
        self.in_psb = false;
        r
    }

    /// Walks PSB+ when in sync.
    fn walk_psbend(&mut self) -> Step {
        self.inside_psb(Self::walk_psbend_packets)
    }

    fn walk_psbend_packets(&mut self) -> Step {
        loop {
            self.next_packet()?;
            if self.timing_packet() {
                continue;
            }
            match self.packet.kind {
                Kind::Psbend => return Ok(()),
                Kind::TipPgd
                | Kind::TipPge
                | Kind::Tip
                | Kind::Tnt
                | Kind::TraceStop
                | Kind::Bad
                | Kind::Psb
                | Kind::Ptwrite
                | Kind::PtwriteIp
                | Kind::Exstop
                | Kind::ExstopIp
                | Kind::Mwait
                | Kind::Pwre
                | Kind::Pwrx
                | Kind::Bbp
                | Kind::Bip
                | Kind::Bep
                | Kind::BepIp => {
                    self.have_tma = false;
                    return Err(Fail::Again);
                }
                Kind::Ovf => return Err(self.overflow_error()),
                Kind::Cbr => self.calc_cbr(),
                Kind::Pip => self.set_pip(),
                Kind::Fup => {
                    self.pge = true;
                    if self.packet.count != 0 {
                        self.set_last_ip();
                        self.psb_ip = self.last_ip;
                    }
                }
                Kind::ModeTsx => self.tx_flags = (self.packet.payload as u32) & flag::IN_TX,
                _ => {}
            }
        }
    }

    fn psb(&mut self) -> Step {
        self.last_ip = 0;
        self.psb_ip = 0;
        self.have_last_ip = true;
        self.walk_psbend()?;
        self.state.kind = kind::PSB_EVT;
        self.state.from_ip = self.psb_ip;
        self.state.to_ip = 0;
        Ok(())
    }

    fn fup_in_psb(&mut self) -> Step {
        if self.ip != self.last_ip {
            match self.walk_fup() {
                Err(Fail::Again) => {}
                other => return other,
            }
        }
        self.pkt_state = PktState::InSync;
        if self.psb().is_err() {
            self.pkt_state = PktState::ErrResync;
            return Err(Fail::Mismatch);
        }
        Ok(())
    }

    /// perf's intel_pt_psb_with_fup: a FUP in PSB+ (not followed by
    /// TIP.PGE) is a branch to decode before the PSB event.
    fn psb_with_fup(&mut self) -> Option<Step> {
        if !self.params.branch_enable || !self.pge {
            return None;
        }
        let mut fup: Option<Packet> = None;
        let mut after_psbend = 0u32;
        self.lookahead(|p| match p.kind {
            Kind::Pad
            | Kind::Mnt
            | Kind::Tsc
            | Kind::Tma
            | Kind::ModeExec
            | Kind::ModeTsx
            | Kind::Mtc
            | Kind::Cyc
            | Kind::Vmcs
            | Kind::Cbr
            | Kind::Pip => {
                if after_psbend != 0 {
                    after_psbend -= 1;
                    after_psbend == 0
                } else {
                    false
                }
            }
            Kind::Fup => {
                if after_psbend != 0 || fup.is_some() || p.count == 0 {
                    return true;
                }
                fup = Some(*p);
                false
            }
            Kind::Psbend => {
                if fup.is_none() {
                    return true;
                }
                after_psbend = 6;
                false
            }
            Kind::TipPge => {
                if after_psbend != 0 {
                    fup = None;
                }
                true
            }
            Kind::Ptwrite
            | Kind::PtwriteIp
            | Kind::Exstop
            | Kind::ExstopIp
            | Kind::Mwait
            | Kind::Pwre
            | Kind::Pwrx
            | Kind::Bbp
            | Kind::Bip
            | Kind::Bep
            | Kind::BepIp
                if after_psbend != 0 =>
            {
                after_psbend -= 1;
                after_psbend == 0
            }
            _ => true,
        });
        let fup = fup?;
        self.packet = fup;
        self.set_last_ip();
        self.pkt_state = PktState::FupInPsb;
        Some(self.fup_in_psb())
    }

    // ---- the main walk ----

    fn walk_trace(&mut self) -> Step {
        let mut no_tip = false;
        loop {
            self.next_packet()?;
            loop {
                // `continue` here re-dispatches the current packet (perf's
                // `goto next`), `break` reads the next one.
                if self.timing_packet() {
                    break;
                }
                match self.packet.kind {
                    Kind::Tnt => {
                        if self.packet.count == 0 {
                            break;
                        }
                        self.tnt = self.packet;
                        self.pkt_state = PktState::Tnt;
                        return self.walk_tnt();
                    }
                    Kind::TipPgd => {
                        if self.packet.count != 0 {
                            self.set_last_ip();
                        }
                        self.pkt_state = PktState::TipPgd;
                        return self.walk_tip();
                    }
                    Kind::TipPge => {
                        self.pge = true;
                        self.set_nr();
                        if self.packet.count == 0 {
                            break;
                        }
                        self.set_ip();
                        self.state.from_ip = 0;
                        self.state.to_ip = self.ip;
                        self.state.kind |= kind::TRACE_BEGIN;
                        return Ok(());
                    }
                    Kind::Ovf => return Err(self.overflow_error()),
                    Kind::Tip => {
                        if self.packet.count != 0 {
                            self.set_last_ip();
                        }
                        self.pkt_state = PktState::Tip;
                        return self.walk_tip();
                    }
                    Kind::Fup => {
                        if self.packet.count == 0 {
                            no_tip = false;
                            break;
                        }
                        self.set_last_ip();
                        if !self.params.branch_enable {
                            self.ip = self.last_ip;
                            if self.fup_event() {
                                return Ok(());
                            }
                            no_tip = false;
                            break;
                        }
                        if self.set_fup_mwait {
                            no_tip = true;
                        }
                        self.pkt_state = if no_tip {
                            PktState::FupNoTip
                        } else {
                            PktState::Fup
                        };
                        match self.walk_fup() {
                            Err(Fail::Again) => {}
                            other => return other,
                        }
                        if no_tip {
                            no_tip = false;
                            break;
                        }
                        return self.walk_fup_tip();
                    }
                    Kind::TraceStop => {
                        self.pge = false;
                        self.tx_flags = 0;
                        self.have_tma = false;
                        break;
                    }
                    Kind::Psb => {
                        self.state.psb_offset = self.pos;
                        self.psb_ip = 0;
                        if let Some(r) = self.psb_with_fup() {
                            return r;
                        }
                        match self.psb() {
                            Err(Fail::Again) => continue,
                            other => return other,
                        }
                    }
                    Kind::Pip => {
                        self.update_pip();
                        break;
                    }
                    Kind::Cbr => {
                        self.calc_cbr();
                        if self.cbr != self.cbr_seen {
                            self.state.kind = 0;
                            return Ok(());
                        }
                        break;
                    }
                    Kind::ModeExec => break,
                    Kind::ModeTsx => {
                        if !self.pge || self.in_psb {
                            self.tx_flags = (self.packet.payload as u32) & flag::IN_TX;
                            break;
                        }
                        self.mode_tsx(&mut no_tip)?;
                        continue;
                    }
                    Kind::Bad => {
                        self.pkt_state = PktState::NoPsb;
                        return Err(Fail::Internal);
                    }
                    // Timing packets were taken above.
                    Kind::Psbend
                    | Kind::Vmcs
                    | Kind::Mnt
                    | Kind::Pad
                    | Kind::Mtc
                    | Kind::Tsc
                    | Kind::Tma
                    | Kind::Cyc => break,
                    Kind::PtwriteIp => {
                        if self.fup_follows()? {
                            self.set_fup_ptw = true;
                            no_tip = true;
                        }
                        continue;
                    }
                    Kind::Ptwrite => {
                        return self.event_here(kind::PTW);
                    }
                    Kind::Mwait => {
                        self.set_fup_mwait = true;
                        break;
                    }
                    Kind::Pwre => {
                        if self.set_fup_mwait {
                            self.set_fup_pwre = true;
                            break;
                        }
                        return self.event_here(kind::PWR_ENTRY);
                    }
                    Kind::ExstopIp => {
                        if self.fup_follows()? {
                            self.set_fup_exstop = true;
                            no_tip = true;
                        }
                        continue;
                    }
                    Kind::Exstop => {
                        return self.event_here(kind::EX_STOP);
                    }
                    Kind::Pwrx => {
                        return self.event_here(kind::PWR_EXIT);
                    }
                    Kind::Bbp | Kind::Bip => break,
                    Kind::Bep => {
                        return self.event_here(kind::BLK_ITEMS);
                    }
                    Kind::BepIp => {
                        if self.fup_follows()? {
                            self.set_fup_bep = true;
                            no_tip = true;
                        }
                        continue;
                    }
                    Kind::Cfe | Kind::CfeIp | Kind::Evd => break,
                }
            }
        }
    }

    /// Walks PSB+ to get in sync.
    fn walk_psb(&mut self) -> Step {
        self.inside_psb(Self::walk_psb_packets)
    }

    fn walk_psb_packets(&mut self) -> Step {
        loop {
            self.next_packet()?;
            if self.timing_packet() {
                continue;
            }
            match self.packet.kind {
                Kind::TipPgd
                | Kind::TipPge
                | Kind::Tip
                | Kind::Ptwrite
                | Kind::PtwriteIp
                | Kind::Exstop
                | Kind::ExstopIp
                | Kind::Mwait
                | Kind::Pwre
                | Kind::Pwrx
                | Kind::Bbp
                | Kind::Bip
                | Kind::Bep
                | Kind::BepIp => return Err(Fail::Mismatch),
                Kind::Fup => {
                    self.pge = true;
                    if self.have_ip() {
                        self.set_ip();
                        self.psb_ip = self.ip;
                    }
                }
                Kind::Cbr => self.calc_cbr(),
                Kind::Pip => self.set_pip(),
                Kind::ModeTsx => self.tx_flags = (self.packet.payload as u32) & flag::IN_TX,
                Kind::TraceStop | Kind::Tnt => {
                    if self.packet.kind == Kind::TraceStop {
                        self.pge = false;
                        self.tx_flags = 0;
                    }
                    self.have_tma = false;
                    self.pkt_state = if self.ip != 0 {
                        PktState::InSync
                    } else {
                        PktState::ErrResync
                    };
                    return Err(Fail::Mismatch);
                }
                Kind::Bad => {
                    self.pkt_state = PktState::NoPsb;
                    return Err(Fail::Internal);
                }
                Kind::Ovf => return Err(self.overflow_error()),
                Kind::Psbend => return Ok(()),
                _ => {}
            }
        }
    }

    fn walk_to_ip(&mut self) -> Step {
        loop {
            self.next_packet()?;
            if self.timing_packet() {
                continue;
            }
            let ip_kind = self.packet.kind;
            match ip_kind {
                Kind::TipPgd | Kind::TipPge | Kind::Tip | Kind::Fup => {
                    match ip_kind {
                        Kind::TipPgd => self.pge = false,
                        Kind::TipPge | Kind::Tip => self.pge = true,
                        _ => {}
                    }
                    if self.have_ip() {
                        self.set_ip();
                    }
                    if self.ip != 0 {
                        self.state.kind |= match ip_kind {
                            Kind::TipPgd => kind::TRACE_END,
                            Kind::TipPge => kind::TRACE_BEGIN,
                            _ => 0,
                        };
                        return Ok(());
                    }
                }
                Kind::Cbr => self.calc_cbr(),
                Kind::Pip => self.set_pip(),
                Kind::ModeTsx => self.tx_flags = (self.packet.payload as u32) & flag::IN_TX,
                Kind::Ovf => return Err(self.overflow_error()),
                Kind::Bad => {
                    self.pkt_state = PktState::NoPsb;
                    return Err(Fail::Internal);
                }
                Kind::TraceStop => {
                    self.pge = false;
                    self.tx_flags = 0;
                    self.have_tma = false;
                }
                Kind::Psb => {
                    self.state.psb_offset = self.pos;
                    self.psb_ip = 0;
                    self.last_ip = 0;
                    self.have_last_ip = true;
                    self.walk_psb()?;
                    self.state.kind = kind::PSB_EVT;
                    self.state.from_ip = self.psb_ip;
                    self.state.to_ip = 0;
                    return Ok(());
                }
                _ => {}
            }
        }
    }

    fn clear_fup_events(&mut self) {
        self.set_fup_tx_flags = false;
        self.set_fup_ptw = false;
        self.set_fup_mwait = false;
        self.set_fup_pwre = false;
        self.set_fup_exstop = false;
        self.set_fup_bep = false;
    }

    fn sync_ip(&mut self) -> Step {
        self.clear_fup_events();
        if !self.params.branch_enable {
            self.pkt_state = PktState::InSync;
            self.overflow = false;
            self.state.kind = 0;
            return Ok(());
        }
        self.walk_to_ip()?;
        if self.state.kind & kind::PSB_EVT != 0 && self.ip == 0 {
            return Ok(());
        }
        self.pkt_state = PktState::InSync;
        self.overflow = false;
        self.state.from_ip = 0;
        self.state.to_ip = self.ip;
        Ok(())
    }

    fn sync(&mut self) -> Step {
        self.pge = false;
        self.have_last_ip = false;
        self.last_ip = 0;
        self.psb_ip = 0;
        self.ip = 0;
        self.scan_for_psb()?;
        self.have_last_ip = true;
        self.pkt_state = PktState::NoIp;
        if let Err(e) = self.walk_psb() {
            // perf 6.1 goes on from a bad packet in this PSB+ in sync, at
            // the ip of the FUP before it (seen in its decoder log: no
            // scan for an ip follows, the next CBR is a sample at the FUP).
            if e == Fail::BadPacket {
                self.pkt_state = PktState::InSync;
            }
            return Err(e);
        }
        self.state.kind = kind::PSB_EVT;
        self.state.from_ip = self.psb_ip;
        self.state.to_ip = 0;
        if self.ip != 0 {
            self.pkt_state = PktState::InSync;
        }
        Ok(())
    }

    fn step(&mut self) -> Step {
        match self.pkt_state {
            PktState::NoPsb => self.sync(),
            PktState::NoIp | PktState::ErrResync => {
                if self.pkt_state == PktState::NoIp {
                    self.have_last_ip = false;
                    self.last_ip = 0;
                    self.ip = 0;
                }
                self.sync_ip()
            }
            PktState::InSync => self.walk_trace(),
            PktState::Tnt => match self.walk_tnt() {
                Err(Fail::Again) => self.walk_trace(),
                other => other,
            },
            PktState::Tip | PktState::TipPgd => self.walk_tip(),
            PktState::Fup => match self.walk_fup() {
                Err(Fail::Again) => self.walk_fup_tip(),
                other => other,
            },
            PktState::FupNoTip => match self.walk_fup() {
                Err(Fail::Again) => self.walk_trace(),
                other => other,
            },
            PktState::FupInPsb => self.fup_in_psb(),
        }
    }

    /// The next state: a sample-worthy event, or an error (`err` set).
    pub fn decode(&mut self) -> State {
        let result = loop {
            self.state.kind = kind::BRANCH;
            self.state.flags = 0;
            match self.step() {
                Err(Fail::NoLink) => continue,
                r => break r,
            }
        };
        match result {
            Err(e) => {
                self.state.err = e.code();
                self.state.from_ip = self.ip;
                self.update_sample_time();
                self.set_nr();
            }
            Ok(()) => {
                self.state.err = 0;
                if self.cbr != self.cbr_seen {
                    self.cbr_seen = self.cbr;
                    if self.state.kind == 0 {
                        self.state.from_ip = self.ip;
                        self.state.to_ip = 0;
                    }
                    self.state.kind |= kind::CBR_CHG;
                    self.state.cbr_payload = self.cbr_payload;
                    self.state.cbr = self.cbr;
                }
                if self.pkt_state.sample_time() {
                    self.update_sample_time();
                }
            }
        }
        // perf gives a PSB event its TSC packet's time.
        if self.state.kind & kind::PSB_EVT != 0 && self.tsc_timestamp != 0 {
            self.sample_timestamp = self.tsc_timestamp;
        }
        self.state.from_nr = self.nr;
        self.state.to_nr = self.next_nr;
        self.nr = self.next_nr;
        self.state.timestamp = self.sample_timestamp;
        // No instructions are counted, so perf's estimate adds nothing.
        self.state.est_timestamp = self.sample_timestamp;
        self.state
    }
}

/// perf's intel_pt_fixup_last_mtc: the MTC bits a TMA lacks (MTC period
/// over 8), taken from the first MTC after it.
fn fixup_mtc(mtc: u32, shift: u32, last_mtc: u32) -> u32 {
    let first_missing_bit = 1u32 << (16 - shift.min(16));
    let mask = !(first_missing_bit.wrapping_sub(1));
    let mut last = last_mtc | (mtc & mask);
    if last >= mtc {
        last = last.wrapping_sub(first_missing_bit) & 0xff;
    }
    last
}

/// Where the next PSB at or after `from` starts.
fn find_psb(data: &[u8], from: usize) -> Option<usize> {
    data.get(from..)?
        .windows(PSB.len())
        .position(|w| w == PSB)
        .map(|i| from + i)
}

/// The TSC packet of the PSB+ at the start of `data` (perf's
/// intel_pt_next_tsc).
fn psb_tsc(data: &[u8]) -> Option<u64> {
    let mut ctx = Context::None;
    let mut at = 0;
    while at < data.len() {
        let (p, n) = packet::next(&data[at..], &mut ctx).ok()?;
        match p.kind {
            Kind::Tsc => return Some(p.payload),
            Kind::Psbend => return None,
            _ => at += n,
        }
    }
    None
}

/// A 7-byte TSC made 8 bytes with the reference's top byte, allowing for
/// wrap-around.
fn eight_byte_tsc(tsc: u64, reference: u64) -> u64 {
    let mut t = tsc | (reference & (0xff << 56));
    if t < reference {
        if reference - t > (1 << 55) {
            t = t.wrapping_add(1 << 56);
        }
    } else if t - reference > (1 << 55) {
        t = t.wrapping_sub(1 << 56);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoCode;

    impl Code for NoCode {
        fn walk_failure(&mut self, _ip: u64, _nr: bool) -> WalkError {
            WalkError::Invalid
        }
    }

    fn decode_all(data: &[u8]) -> Vec<State> {
        let params = Params {
            branch_enable: true,
            mtc_shift: 3,
            tsc_ctc_ratio_n: 100,
            tsc_ctc_ratio_d: 2,
            max_non_turbo_ratio: 12,
        };
        let buffers = vec![Buffer {
            data,
            reference: 0xbc4c_d519_a6,
            trace_nr: 1,
            consecutive: false,
        }];
        let mut d = Decoder::new(params, buffers, NoCode);
        let mut states = Vec::new();
        for _ in 0..100_000 {
            let s = d.decode();
            if s.err == code::NODATA {
                return states;
            }
            states.push(s);
        }
        panic!("the decoder did not reach the end of its data");
    }

    /// PSB, PSB+ with a FUP, TSC and CBR, then TIP.PGE and a TNT: the PSB
    /// event, the trace start, and the walk that fails without code.
    #[test]
    fn decodes_a_psb_and_fails_the_walk_as_perf_does_without_code() {
        let mut data = PSB.to_vec();
        data.extend_from_slice(&[0x7d, 0x00, 0xd3, 0x60, 0xb9, 0xff, 0xff]); // FUP
        data.extend_from_slice(&[0x19, 0xe8, 0xcf, 0xd2, 0x4c, 0xbc, 0x00, 0x00]); // TSC
        data.extend_from_slice(&[0x02, 0x03, 0x1d, 0x00]); // CBR
        data.extend_from_slice(&[0x02, 0x23]); // PSBEND
        data.extend_from_slice(&[0x71, 0x02, 0xd3, 0x60, 0xb9, 0xff, 0xff]); // TIP.PGE
        data.push(0x06); // TNT
        let states = decode_all(&data);
        let psb = &states[0];
        assert_eq!(psb.err, 0);
        assert_ne!(psb.kind & kind::PSB_EVT, 0);
        assert_ne!(psb.kind & kind::CBR_CHG, 0);
        assert_eq!(
            (psb.from_ip, psb.cbr, psb.timestamp),
            (0xffff_ffff_b960_d300, 0x1d, 0xbc4c_d2cf_e8)
        );
        assert!(states[1..]
            .iter()
            .any(|s| s.err == code::NOINSN && s.from_ip == 0xffff_ffff_b960_d302));
    }

    /// Whatever the bytes, decoding ends without a panic.
    #[test]
    fn garbage_and_truncated_traces_end() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in [0usize, 1, 7, 16, 17, 300, 4096] {
            let mut data: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            decode_all(&data);
            // The same after a PSB, so that the state machine gets going.
            let mut with_psb = PSB.to_vec();
            with_psb.append(&mut data);
            decode_all(&with_psb);
            decode_all(&with_psb[..with_psb.len() / 2]);
        }
    }
}
