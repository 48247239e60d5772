//! The order in which a mapped launch (`job = "launch"`, `mmap = true`) touches each file's
//! pages, shared by the model and `wblab measure` so both fault the same pages in the same
//! order.

/// The page a program's `k`-th touch of a mapped file of `pages` pages lands on: a walk with
/// a stride near the golden section of the file, coprime with its length, so that every page
/// is touched once and consecutive touches land far apart — code runs through a library's
/// functions in no file order, and each fault that misses reads around its own page.
pub fn touched_page(k: u64, pages: u64) -> u64 {
    if pages <= 1 {
        return 0;
    }
    (k % pages) * stride(pages) % pages
}

/// The walk's stride: the first number from `0.618 × pages` up that is coprime with `pages`.
fn stride(pages: u64) -> u64 {
    let mut s = (pages * 618 / 1000).max(1);
    while gcd(s, pages) != 1 {
        s += 1;
    }
    s
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
            let mut seen = vec![false; pages as usize];
            for k in 0..pages {
                let p = touched_page(k, pages);
                assert!(!seen[p as usize], "{pages} pages: page {p} touched twice");
                seen[p as usize] = true;
            }
            if pages >= 64 {
                let far = (1..pages).filter(|&k| touched_page(k, pages).abs_diff(touched_page(k - 1, pages)) >= pages / 8);
                assert!(far.count() as u64 >= pages / 2, "{pages} pages: consecutive touches too close");
            }
        }
    }
}
