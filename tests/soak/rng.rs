//! A tiny seeded xorshift generator: reproducible choices without a dependency.

/// xorshift64* (Vigna); never zero.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (zero is replaced, xorshift must not start at zero).
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Same seed, same sequence; values in range; not stuck (run before the sections).
pub fn self_check() {
    let a: Vec<usize> = {
        let mut r = XorShift::new(7);
        (0..100).map(|_| r.below(5)).collect()
    };
    let mut r = XorShift::new(7);
    let b: Vec<usize> = (0..100).map(|_| r.below(5)).collect();
    assert_eq!(a, b);
    assert!(a.iter().all(|&v| v < 5));
    // All five values occur: the generator is not stuck.
    for v in 0..5 {
        assert!(a.contains(&v), "{v} never drawn");
    }
    assert_ne!(XorShift::new(0).next_u64(), 0);
}
