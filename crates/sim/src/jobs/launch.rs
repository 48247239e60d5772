//! The order in which a mapped launch (`job = "launch"`, `mmap = true`) touches each file's
//! pages, shared by the model and `wblab measure` so both fault the same pages in the same
//! order.

/// The order of a program's touches of a mapped file of `pages` pages: a walk with a stride
/// near the golden section of the file, coprime with its length, so that every page is touched
/// once and consecutive touches land far apart — code runs through a library's functions in no
/// file order, and each fault that misses reads around its own page.
#[derive(Clone, Copy, Debug)]
pub struct TouchOrder {
    pages: u64,
    stride: u64,
}

impl TouchOrder {
    pub fn new(pages: u64) -> Self {
        // The first number from 0.618 × pages up that is coprime with pages.
        let mut stride = (pages * 618 / 1000).max(1);
        while pages > 1 && gcd(stride, pages) != 1 {
            stride += 1;
        }
        TouchOrder { pages, stride }
    }

    /// The page the `k`-th touch lands on.
    pub fn page(&self, k: u64) -> u64 {
        if self.pages <= 1 {
            return 0;
        }
        (k % self.pages) * self.stride % self.pages
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_touched_once_and_neighbours_fall_apart() {
        for pages in [1u64, 2, 3, 16, 64, 512, 513, 1000] {
            let order = TouchOrder::new(pages);
            let mut seen = vec![false; pages as usize];
            for k in 0..pages {
                let p = order.page(k);
                assert!(!seen[p as usize], "{pages} pages: page {p} touched twice");
                seen[p as usize] = true;
            }
            if pages >= 64 {
                let far = (1..pages).filter(|&k| order.page(k).abs_diff(order.page(k - 1)) >= pages / 8);
                assert!(far.count() as u64 >= pages / 2, "{pages} pages: consecutive touches too close");
            }
        }
    }
}
