//! Resident memory of this process, from `/proc/self/status`.

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`, …) in KiB.
pub fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    parse_kib(&status, field).unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn parse_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// Resident set size now, KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS")
}

/// Peak resident set size of the process so far, KiB.
pub fn peak_kib() -> u64 {
    status_kib("VmHWM")
}

/// KiB as MiB, for printing.
pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The parser reads the fields it should and nothing else (run before the sections).
pub fn self_check() {
    let status = "Name:\tsoak\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
    assert_eq!(parse_kib(status, "VmRSS"), Some(10240));
    assert_eq!(parse_kib(status, "VmHWM"), Some(20480));
    assert_eq!(parse_kib(status, "VmSwap"), None);
}
