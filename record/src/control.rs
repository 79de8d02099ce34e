//! perf record's `--control`: another program starts and stops the
//! measurement by writing commands, one per line, to a FIFO or an
//! inherited file descriptor, and reads `ack` back from a second one.
//!
//! The commands are perf 6.1's: `enable [EVENT]`, `disable [EVENT]`,
//! `evlist [-v|-g|-F]`, `snapshot`, `ping` and `stop`. Each is answered with
//! `ack\n\0` on the ack channel, except unknown ones.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// Where the commands come from, as `--control` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlSpec {
    /// `fd:CTL[,ACK]`: descriptors the caller left open for us.
    Fds { ctl: RawFd, ack: Option<RawFd> },
    /// `fifo:CTL[,ACK]`: named pipes, opened read-write so that writers may
    /// come and go.
    Fifos { ctl: PathBuf, ack: Option<PathBuf> },
}

impl ControlSpec {
    /// Parses perf's `fd:ctl-fd[,ack-fd]` or `fifo:ctl-fifo[,ack-fifo]`.
    pub fn parse(text: &str) -> Result<ControlSpec, String> {
        let bad = || format!("invalid --control '{text}': expected fd:CTL[,ACK] or fifo:CTL[,ACK]");
        if let Some(fds) = text.strip_prefix("fd:") {
            let (ctl, ack) = match fds.split_once(',') {
                Some((c, a)) => (c, Some(a)),
                None => (fds, None),
            };
            let number = |s: &str| s.trim().parse::<RawFd>().ok().filter(|&fd| fd >= 0);
            let ctl = number(ctl).ok_or_else(bad)?;
            let ack = match ack {
                Some(a) => Some(number(a).ok_or_else(bad)?),
                None => None,
            };
            return Ok(ControlSpec::Fds { ctl, ack });
        }
        let fifos = text.strip_prefix("fifo:").ok_or_else(bad)?;
        let (ctl, ack) = match fifos.split_once(',') {
            Some((c, a)) => (c, Some(a).filter(|a| !a.is_empty())),
            None => (fifos, None),
        };
        if ctl.is_empty() {
            return Err(bad());
        }
        Ok(ControlSpec::Fifos {
            ctl: PathBuf::from(ctl),
            ack: ack.map(PathBuf::from),
        })
    }
}

/// One command read from the control channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlCommand {
    /// `enable` (all events) or `enable NAME`.
    Enable(Option<String>),
    /// `disable` (all events) or `disable NAME`.
    Disable(Option<String>),
    /// `evlist [-v|-g|-F]`: the events, on stderr.
    Evlist(Option<String>),
    /// `snapshot`: for AUX area snapshots, which this machine has none of.
    Snapshot,
    /// `stop`: end the recording.
    Stop,
    /// `ping`: only the ack.
    Ping,
    /// Anything else: no ack.
    Unsupported,
    /// A known command followed by something other than a space and an
    /// argument (perf's "failed: wrong command"); still acked.
    Malformed,
}

impl ControlCommand {
    /// Parses one line the way perf does: by prefix, then an optional
    /// argument after one space.
    pub fn parse(line: &str) -> ControlCommand {
        let arg = |tag: &str| -> Result<Option<String>, ()> {
            match &line[tag.len()..] {
                "" => Ok(None),
                rest => rest
                    .strip_prefix(' ')
                    .map(|a| Some(a.to_string()))
                    .ok_or(()),
            }
        };
        if line.starts_with("enable") {
            arg("enable").map_or(ControlCommand::Malformed, ControlCommand::Enable)
        } else if line.starts_with("disable") {
            arg("disable").map_or(ControlCommand::Malformed, ControlCommand::Disable)
        } else if line.starts_with("snapshot") {
            ControlCommand::Snapshot
        } else if line.starts_with("evlist") {
            match arg("evlist") {
                Ok(None) => ControlCommand::Evlist(None),
                Ok(Some(a)) if matches!(a.as_str(), "-v" | "-g" | "-F") => {
                    ControlCommand::Evlist(Some(a))
                }
                _ => ControlCommand::Malformed,
            }
        } else if line.starts_with("stop") {
            ControlCommand::Stop
        } else if line.starts_with("ping") {
            ControlCommand::Ping
        } else {
            ControlCommand::Unsupported
        }
    }

    /// Whether perf answers it with an ack.
    pub fn is_acked(&self) -> bool {
        !matches!(self, ControlCommand::Unsupported)
    }
}

/// perf's EVLIST_CTL_CMD_MAX_LEN less its NUL: longer lines are cut there.
const MAX_COMMAND_LEN: usize = 63;

enum Channel {
    Owned(File),
    Inherited(RawFd),
}

impl Channel {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Channel::Owned(f) => f.as_fd(),
            // SAFETY: the fd was checked to be open when the channel was
            // made, and prec never closes an inherited control fd.
            Channel::Inherited(fd) => unsafe { BorrowedFd::borrow_raw(*fd) },
        }
    }
}

/// The open control channel.
pub struct Control {
    ctl: Channel,
    ack: Option<Channel>,
    /// A line read in part (the writer has not finished it yet).
    partial: Vec<u8>,
    /// The control fd hung up: nothing more to read.
    closed: bool,
}

impl Control {
    /// Opens the FIFOs, or checks the inherited fds are open.
    pub fn open(spec: &ControlSpec) -> Result<Control, String> {
        let (ctl, ack) = match spec {
            ControlSpec::Fds { ctl, ack } => {
                for fd in std::iter::once(ctl).chain(ack) {
                    if !crate::sys::fd_is_open(*fd) {
                        return Err(format!("--control: fd {fd} is not open"));
                    }
                }
                crate::sys::set_nonblocking(*ctl)
                    .map_err(|e| format!("--control: fd {ctl}: {e}"))?;
                (Channel::Inherited(*ctl), ack.map(Channel::Inherited))
            }
            ControlSpec::Fifos { ctl, ack } => {
                let open = |path: &PathBuf| {
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(path)
                        .map(Channel::Owned)
                        .map_err(|e| format!("Failed to open '{}': {e}", path.display()))
                };
                let ack = match ack {
                    Some(a) => Some(open(a)?),
                    None => None,
                };
                (open(ctl)?, ack)
            }
        };
        Ok(Control {
            ctl,
            ack,
            partial: Vec::new(),
            closed: false,
        })
    }

    /// The fd to poll for commands (`None` once it hung up).
    pub fn poll_fd(&self) -> Option<RawFd> {
        (!self.closed).then(|| self.ctl.fd().as_raw_fd())
    }

    /// The control fd hung up.
    pub fn hang_up(&mut self) {
        self.closed = true;
    }

    /// The complete commands available now.
    pub fn read_commands(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            match crate::sys::read_fd(self.ctl.fd(), &mut chunk) {
                Ok(0) => {
                    self.closed = true;
                    break;
                }
                Ok(n) => {
                    for &byte in &chunk[..n] {
                        if byte == b'\n' || byte == 0 {
                            lines.push(std::mem::take(&mut self.partial));
                        } else if self.partial.len() < MAX_COMMAND_LEN {
                            self.partial.push(byte);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        lines
            .into_iter()
            .filter(|l| !l.is_empty())
            .map(|l| String::from_utf8_lossy(&l).into_owned())
            .collect()
    }

    /// Writes perf's `ack\n\0`.
    pub fn ack(&self) -> io::Result<()> {
        match &self.ack {
            Some(ack) => crate::sys::write_fd(ack.fd(), b"ack\n\0"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_like_perf() {
        assert_eq!(
            ControlSpec::parse("fd:10,11"),
            Ok(ControlSpec::Fds {
                ctl: 10,
                ack: Some(11)
            })
        );
        assert_eq!(
            ControlSpec::parse("fifo:ctl"),
            Ok(ControlSpec::Fifos {
                ctl: "ctl".into(),
                ack: None
            })
        );
        assert!(ControlSpec::parse("fifo:").is_err());
        assert!(ControlSpec::parse("fd:x").is_err());
        assert!(ControlSpec::parse("pipe:1").is_err());
    }

    #[test]
    fn commands_parse_by_prefix() {
        use ControlCommand::*;
        assert_eq!(ControlCommand::parse("enable"), Enable(None));
        assert_eq!(
            ControlCommand::parse("disable cpu-clock"),
            Disable(Some("cpu-clock".into()))
        );
        assert_eq!(ControlCommand::parse("enablex"), Malformed);
        assert_eq!(ControlCommand::parse("evlist -x"), Malformed);
        assert_eq!(
            ControlCommand::parse("evlist -F"),
            Evlist(Some("-F".into()))
        );
        assert_eq!(ControlCommand::parse("stopped"), Stop);
        assert_eq!(ControlCommand::parse("ack"), Unsupported);
        assert!(!Unsupported.is_acked());
        assert!(Malformed.is_acked());
    }
}
