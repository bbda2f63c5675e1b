;; random.wat: Philox 4x32-10 on four blocks at once (one block a SIMD lane) and the maps from its
;; words to uniform and normal f32, randint's integers and dropout's products, bit-identical to
;; hip-src/random.hip and to the scalar CPU reference (src/backends/cpu/philox.ts, normal.ts,
;; random.ts); and the f32 -> f16/bf16 rounding of src/core/dtype.ts. Assembled by
;; scripts/wasm/assemble.ts into random-wasm.ts; used by src/backends/cpu/random-wasm.ts, which lays
;; out the memory:
;;   $ks: the 20 round keys (k0, k1 of round r at 8r, 8r + 4)
;;   $tab: randn's table (randn-table.ts) less 4064 bytes, so that the byte address of
;;         coefficient 0 of segment (bits(v) >> 20) - 1016 is $tab + ((bits(v) >> 20) << 2)
;;   $out: 64 bytes a quad of blocks, block-major (block b's four values at out + 16 (b - b0);
;;         integers: its two i64 values), then room for the chunk's values as 16-bit floats
;; Every exported Philox loop runs $quads quads of blocks from block $b (low 32 bits; the caller
;; keeps $b + 4 $quads within one 2^32 run) with high counter word $bhi. f32 arithmetic in wasm
;; is IEEE single with one rounding per operation and no fused multiply-add, as the kernels'.
(module
  (memory (export "memory") 32)

  ;; the words of blocks b .. b + 3 (counter words 0 = c0's lanes, 1 = c1's, 2 = 3 = 0), as
  ;; four vectors at $dst: word 0 of the four blocks, then word 1, 2, 3
  (func $philox4 (param $ks i32) (param $c0 v128) (param $c1 v128) (param $dst i32)
    (local $c2 v128) (local $c3 v128) (local $hi0 v128) (local $lo0 v128) (local $hi1 v128) (local $lo1 v128)
    (local $k i32) (local $end i32)
    local.get $ks
    local.set $k
    local.get $ks
    i32.const 80
    i32.add
    local.set $end
    loop $round
      ;; hi0:lo0 = c0 * 0xd2511f53, hi1:lo1 = c2 * 0xcd9e8d57 (64-bit products, lanes 0-1 and 2-3)
      local.get $c0
      v128.const i32x4 0xd2511f53 0xd2511f53 0xd2511f53 0xd2511f53
      i64x2.extmul_low_i32x4_u
      local.get $c0
      v128.const i32x4 0xd2511f53 0xd2511f53 0xd2511f53 0xd2511f53
      i64x2.extmul_high_i32x4_u
      i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31
      local.set $hi0
      local.get $c0
      v128.const i32x4 0xd2511f53 0xd2511f53 0xd2511f53 0xd2511f53
      i32x4.mul
      local.set $lo0
      local.get $c2
      v128.const i32x4 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57
      i64x2.extmul_low_i32x4_u
      local.get $c2
      v128.const i32x4 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57
      i64x2.extmul_high_i32x4_u
      i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31
      local.set $hi1
      local.get $c2
      v128.const i32x4 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57 0xcd9e8d57
      i32x4.mul
      local.set $lo1
      ;; c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0
      local.get $hi1
      local.get $c1
      v128.xor
      local.get $k
      v128.load32_splat offset=0
      v128.xor
      local.set $c0
      local.get $lo1
      local.set $c1
      local.get $hi0
      local.get $c3
      v128.xor
      local.get $k
      v128.load32_splat offset=4
      v128.xor
      local.set $c2
      local.get $lo0
      local.set $c3
      local.get $k
      i32.const 8
      i32.add
      local.tee $k
      local.get $end
      i32.ne
      br_if $round
    end
    local.get $dst
    local.get $c0
    v128.store offset=0
    local.get $dst
    local.get $c1
    v128.store offset=16
    local.get $dst
    local.get $c2
    v128.store offset=32
    local.get $dst
    local.get $c3
    v128.store offset=48)

  ;; the counter word 0 vector of quad q: b + 4q + (0, 1, 2, 3)
  (func $lanes (param $b i32) (param $q i32) (result v128)
    local.get $b
    local.get $q
    i32.const 2
    i32.shl
    i32.add
    i32x4.splat
    v128.const i32x4 0 1 2 3
    i32x4.add)

  ;; stores vectors a, b, c, d (value k of the four blocks in vector k) block-major at $dst
  (func $transpose (param $dst i32) (param $a v128) (param $b v128) (param $c v128) (param $d v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    local.get $a
    local.get $b
    i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23
    local.set $t0
    local.get $a
    local.get $b
    i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31
    local.set $t1
    local.get $c
    local.get $d
    i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23
    local.set $t2
    local.get $c
    local.get $d
    i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31
    local.set $t3
    local.get $dst
    local.get $t0
    local.get $t2
    i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
    v128.store offset=0
    local.get $dst
    local.get $t0
    local.get $t2
    i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31
    v128.store offset=16
    local.get $dst
    local.get $t1
    local.get $t3
    i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
    v128.store offset=32
    local.get $dst
    local.get $t1
    local.get $t3
    i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31
    v128.store offset=48)

  ;; the raw words, block-major
  (func (export "words") (param $ks i32) (param $b i32) (param $bhi i32) (param $quads i32) (param $out i32) (param $tmp i32)
    (local $q i32)
    block $done
      local.get $quads
      i32.eqz
      br_if $done
      loop $quad
        local.get $ks
        local.get $b
        local.get $q
        call $lanes
        local.get $bhi
        i32x4.splat
        local.get $tmp
        call $philox4
        local.get $out
        local.get $q
        i32.const 6
        i32.shl
        i32.add
        local.get $tmp
        v128.load offset=0
        local.get $tmp
        v128.load offset=16
        local.get $tmp
        v128.load offset=32
        local.get $tmp
        v128.load offset=48
        call $transpose
        local.get $q
        i32.const 1
        i32.add
        local.tee $q
        local.get $quads
        i32.ne
        br_if $quad
      end
    end)

  ;; uniform f32 (w >> 8) 2^-24 of one vector of words
  (func $uniform (param $w v128) (result v128)
    local.get $w
    i32.const 8
    i32x4.shr_u
    f32x4.convert_i32x4_u
    v128.const i32x4 0x33800000 0x33800000 0x33800000 0x33800000
    f32x4.mul)

  (func (export "uniform") (param $ks i32) (param $b i32) (param $bhi i32) (param $quads i32) (param $out i32) (param $tmp i32)
    (local $q i32)
    block $done
      local.get $quads
      i32.eqz
      br_if $done
      loop $quad
        local.get $ks
        local.get $b
        local.get $q
        call $lanes
        local.get $bhi
        i32x4.splat
        local.get $tmp
        call $philox4
        local.get $out
        local.get $q
        i32.const 6
        i32.shl
        i32.add
        local.get $tmp
        v128.load offset=0
        call $uniform
        local.get $tmp
        v128.load offset=16
        call $uniform
        local.get $tmp
        v128.load offset=32
        call $uniform
        local.get $tmp
        v128.load offset=48
        call $uniform
        call $transpose
        local.get $q
        i32.const 1
        i32.add
        local.tee $q
        local.get $quads
        i32.ne
        br_if $quad
      end
    end)

  ;; the normal of each word (NormalTable::normal in hip-src/random.hip): v = f32(2 (w mod 2^31)
  ;; + 1); the cubic of segment (bits(v) >> 20) - 1016 in d = v - (its middle); w's sign
  (func $normal (param $w v128) (param $tab i32) (result v128)
    (local $v v128) (local $d v128) (local $addr v128) (local $z v128) (local $c v128)
    (local $a0 i32) (local $a1 i32) (local $a2 i32) (local $a3 i32)
    local.get $w
    i32.const 1
    i32x4.shl
    v128.const i32x4 1 1 1 1
    v128.or
    f32x4.convert_i32x4_u
    local.tee $v
    local.get $v
    v128.const i32x4 0xfff00000 0xfff00000 0xfff00000 0xfff00000
    v128.and
    v128.const i32x4 0x00080000 0x00080000 0x00080000 0x00080000
    v128.or
    f32x4.sub
    local.set $d
    local.get $v
    i32.const 20
    i32x4.shr_u
    i32.const 2
    i32x4.shl
    local.get $tab
    i32x4.splat
    i32x4.add
    local.tee $addr
    i32x4.extract_lane 0
    local.set $a0
    local.get $addr
    i32x4.extract_lane 1
    local.set $a1
    local.get $addr
    i32x4.extract_lane 2
    local.set $a2
    local.get $addr
    i32x4.extract_lane 3
    local.set $a3
    ;; z = c3
    local.get $a0
    local.get $z
    v128.load32_lane offset=3084 0
    local.set $z
    local.get $a1
    local.get $z
    v128.load32_lane offset=3084 1
    local.set $z
    local.get $a2
    local.get $z
    v128.load32_lane offset=3084 2
    local.set $z
    local.get $a3
    local.get $z
    v128.load32_lane offset=3084 3
    local.set $z
    ;; z = z d + c2
    local.get $a0
    local.get $c
    v128.load32_lane offset=2056 0
    local.set $c
    local.get $a1
    local.get $c
    v128.load32_lane offset=2056 1
    local.set $c
    local.get $a2
    local.get $c
    v128.load32_lane offset=2056 2
    local.set $c
    local.get $a3
    local.get $c
    v128.load32_lane offset=2056 3
    local.set $c
    local.get $z
    local.get $d
    f32x4.mul
    local.get $c
    f32x4.add
    local.set $z
    ;; z = z d + c1
    local.get $a0
    local.get $c
    v128.load32_lane offset=1028 0
    local.set $c
    local.get $a1
    local.get $c
    v128.load32_lane offset=1028 1
    local.set $c
    local.get $a2
    local.get $c
    v128.load32_lane offset=1028 2
    local.set $c
    local.get $a3
    local.get $c
    v128.load32_lane offset=1028 3
    local.set $c
    local.get $z
    local.get $d
    f32x4.mul
    local.get $c
    f32x4.add
    local.set $z
    ;; z = z d + c0
    local.get $a0
    local.get $c
    v128.load32_lane offset=0 0
    local.set $c
    local.get $a1
    local.get $c
    v128.load32_lane offset=0 1
    local.set $c
    local.get $a2
    local.get $c
    v128.load32_lane offset=0 2
    local.set $c
    local.get $a3
    local.get $c
    v128.load32_lane offset=0 3
    local.set $c
    local.get $z
    local.get $d
    f32x4.mul
    local.get $c
    f32x4.add
    ;; the sign of w
    local.get $w
    v128.const i32x4 0x80000000 0x80000000 0x80000000 0x80000000
    v128.and
    v128.xor)

  (func (export "normal") (param $ks i32) (param $b i32) (param $bhi i32) (param $quads i32) (param $out i32) (param $tmp i32) (param $tab i32)
    (local $q i32)
    block $done
      local.get $quads
      i32.eqz
      br_if $done
      loop $quad
        local.get $ks
        local.get $b
        local.get $q
        call $lanes
        local.get $bhi
        i32x4.splat
        local.get $tmp
        call $philox4
        local.get $out
        local.get $q
        i32.const 6
        i32.shl
        i32.add
        local.get $tmp
        v128.load offset=0
        local.get $tab
        call $normal
        local.get $tmp
        v128.load offset=16
        local.get $tab
        call $normal
        local.get $tmp
        v128.load offset=32
        local.get $tab
        call $normal
        local.get $tmp
        v128.load offset=48
        local.get $tab
        call $normal
        call $transpose
        local.get $q
        i32.const 1
        i32.add
        local.tee $q
        local.get $quads
        i32.ne
        br_if $quad
      end
    end)

  ;; randint's integers. k = floor(((hi << 32) | lo) range / 2^64) of each 64-bit draw, as
  ;; hip-src's scale64: the high word of hi range plus the carry out of (the low word of hi range
  ;; + the high word of lo range); range 2^32 comes as $range 0 with $full all ones, giving k = hi.
  ;; Then low + k as a 64-bit integer from low's words ($lowlo, $lowhi; two's complement).

  ;; the high words of the u64 lanes of a, then of b
  (func $hi32 (param $a v128) (param $b v128) (result v128)
    local.get $a
    local.get $b
    i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31)

  ;; the low words of the u64 lanes of a, then of b
  (func $lo32 (param $a v128) (param $b v128) (result v128)
    local.get $a
    local.get $b
    i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27)

  ;; 1 in the lanes where a + b (unsigned) reaches 2^32: the top bit of (a >> 1) + (b >> 1) +
  ;; (a & b & 1), which is floor((a + b) / 2) and cannot overflow
  (func $carry (param $a v128) (param $b v128) (result v128)
    local.get $a
    i32.const 1
    i32x4.shr_u
    local.get $b
    i32.const 1
    i32x4.shr_u
    i32x4.add
    local.get $a
    local.get $b
    v128.and
    v128.const i32x4 1 1 1 1
    v128.and
    i32x4.add
    i32.const 31
    i32x4.shr_u)

  ;; k of the draws with high words $hi and low words $lo
  (func $scale (param $hi v128) (param $lo v128) (param $range v128) (param $full v128) (result v128)
    (local $pl v128) (local $ph v128)
    local.get $hi
    local.get $range
    i64x2.extmul_low_i32x4_u
    local.set $pl
    local.get $hi
    local.get $range
    i64x2.extmul_high_i32x4_u
    local.set $ph
    ;; high word of hi range + carry(low word of hi range, high word of lo range)
    local.get $pl
    local.get $ph
    call $hi32
    local.get $pl
    local.get $ph
    call $lo32
    local.get $lo
    local.get $range
    i64x2.extmul_low_i32x4_u
    local.get $lo
    local.get $range
    i64x2.extmul_high_i32x4_u
    call $hi32
    call $carry
    i32x4.add
    local.get $hi
    local.get $full
    v128.and
    v128.or)

  ;; low + k for each element, as i64: element 2b + j of block b from words 2j (high) and 2j + 1
  ;; (low); 8 elements a quad of blocks, at out + 64q
  (func (export "integers") (param $ks i32) (param $b i32) (param $bhi i32) (param $quads i32) (param $out i32) (param $tmp i32)
    (param $range i32) (param $full i32) (param $lowlo i32) (param $lowhi i32)
    (local $q i32) (local $r v128) (local $f v128) (local $ll v128) (local $lh v128) (local $ka v128) (local $kb v128)
    local.get $range
    i32x4.splat
    local.set $r
    local.get $full
    i32x4.splat
    local.set $f
    local.get $lowlo
    i32x4.splat
    local.set $ll
    local.get $lowhi
    i32x4.splat
    local.set $lh
    block $done
      local.get $quads
      i32.eqz
      br_if $done
      loop $quad
        local.get $ks
        local.get $b
        local.get $q
        call $lanes
        local.get $bhi
        i32x4.splat
        local.get $tmp
        call $philox4
        local.get $tmp
        v128.load offset=0
        local.get $tmp
        v128.load offset=16
        local.get $r
        local.get $f
        call $scale
        local.set $ka
        local.get $tmp
        v128.load offset=32
        local.get $tmp
        v128.load offset=48
        local.get $r
        local.get $f
        call $scale
        local.set $kb
        ;; (low word, high word) of element 2b, then of 2b + 1, for the four blocks
        local.get $out
        local.get $q
        i32.const 6
        i32.shl
        i32.add
        local.get $ll
        local.get $ka
        i32x4.add
        local.get $lh
        local.get $ll
        local.get $ka
        call $carry
        i32x4.add
        local.get $ll
        local.get $kb
        i32x4.add
        local.get $lh
        local.get $ll
        local.get $kb
        call $carry
        i32x4.add
        call $transpose
        local.get $q
        i32.const 1
        i32.add
        local.tee $q
        local.get $quads
        i32.ne
        br_if $quad
      end
    end)

  ;; The 16-bit float formats from f32 bits, rounded to nearest even, as src/core/dtype.ts's
  ;; numberToF16Bits and numberToBf16Bits round an f32 value (bit for bit, NaN included; the CPU
  ;; tests compare every f32). This subset has no lane compares, so selections are branch-free:
  ;; for lanes x, y below 2^31 apart, 0 - ((x - y) >> 31) is all ones where x < y, else 0, and
  ;; r ^ ((r ^ s) & m) takes s where m is set.

  ;; all ones in the lanes where x < y (x - y between -2^31 and 2^31)
  (func $below (param $x v128) (param $y v128) (result v128)
    v128.const i32x4 0 0 0 0
    local.get $x
    local.get $y
    i32x4.sub
    i32.const 31
    i32x4.shr_u
    i32x4.sub)

  ;; r with s in the lanes where m is set
  (func $select (param $r v128) (param $s v128) (param $m v128) (result v128)
    local.get $r
    local.get $r
    local.get $s
    v128.xor
    local.get $m
    v128.and
    v128.xor)

  ;; f16 bits in each lane's low half: |x| from 2^-14 by integer rounding (exponent rebias,
  ;; 0xfff plus the kept lowest bit, >> 13); below 2^-14 by the f32 add |x| + 0.5, whose
  ;; rounding step 2^-24 is f16's subnormal step (Giesen's float_to_half_fast3_rtne); from 65536
  ;; (the smallest f32 that the integer path would not round) infinity; NaN 0x7e00, unsigned
  (func $f16 (param $x v128) (result v128)
    (local $a v128)
    local.get $x
    v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
    v128.and
    local.set $a
    ;; normal: (a - (112 << 23) + 0xfff + ((a >> 13) & 1)) >> 13, the subtraction mod 2^32
    local.get $a
    v128.const i32x4 0xc8000fff 0xc8000fff 0xc8000fff 0xc8000fff
    i32x4.add
    local.get $a
    i32.const 13
    i32x4.shr_u
    v128.const i32x4 1 1 1 1
    v128.and
    i32x4.add
    i32.const 13
    i32x4.shr_u
    ;; subnormal or zero where a < 2^-14: bits(f32(a) + 0.5) - bits(0.5)
    local.get $a
    v128.const i32x4 0x3f000000 0x3f000000 0x3f000000 0x3f000000
    f32x4.add
    v128.const i32x4 0x3f000000 0x3f000000 0x3f000000 0x3f000000
    i32x4.sub
    local.get $a
    v128.const i32x4 0x38800000 0x38800000 0x38800000 0x38800000
    call $below
    call $select
    ;; infinity where a >= 65536 (65520 up to it rounds to infinity on the integer path)
    v128.const i32x4 0x7c00 0x7c00 0x7c00 0x7c00
    v128.const i32x4 0x477fffff 0x477fffff 0x477fffff 0x477fffff
    local.get $a
    call $below
    call $select
    ;; the sign
    local.get $x
    i32.const 16
    i32x4.shr_u
    v128.const i32x4 0x8000 0x8000 0x8000 0x8000
    v128.and
    v128.or
    ;; NaN where a > infinity's bits
    v128.const i32x4 0x7e00 0x7e00 0x7e00 0x7e00
    v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000
    local.get $a
    call $below
    call $select)

  ;; bf16 bits in each lane's low half: (x + 0x7fff + ((x >> 16) & 1)) >> 16 (infinity stays
  ;; infinity, a finite value past bf16's largest rounds to it); NaN 0x7fc0, unsigned
  (func $bf16 (param $x v128) (result v128)
    local.get $x
    v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff
    i32x4.add
    local.get $x
    i32.const 16
    i32x4.shr_u
    v128.const i32x4 1 1 1 1
    v128.and
    i32x4.add
    i32.const 16
    i32x4.shr_u
    v128.const i32x4 0x7fc0 0x7fc0 0x7fc0 0x7fc0
    v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000
    local.get $x
    v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff
    v128.and
    call $below
    call $select)

  ;; 16-bit values r (each lane below 2^16) less 1 where they equal $one: rand's f16 and bf16
  ;; values that round to 1.0 become the largest value below 1; $one = 0x10000 keeps every value
  (func $cap (param $r v128) (param $one v128) (result v128)
    local.get $r
    local.get $r
    local.get $one
    v128.xor
    v128.const i32x4 1 1 1 1
    i32x4.sub
    i32.const 31
    i32x4.shr_u
    i32x4.sub)

  ;; the low halves of the lanes of a, then of b, as eight 16-bit values
  (func $pack (param $a v128) (param $b v128) (result v128)
    local.get $a
    local.get $b
    i8x16.shuffle 0 1 4 5 8 9 12 13 16 17 20 21 24 25 28 29)

  ;; the lanes' 16-bit floats: bf16 where $bf is set, else f16
  (func $half1 (param $x v128) (param $bf i32) (result v128)
    block $f16
      local.get $bf
      i32.eqz
      br_if $f16
      local.get $x
      call $bf16
      return
    end
    local.get $x
    call $f16)

  ;; $groups groups of eight f32 at $src into eight 16-bit floats at $dst (16 bytes a group):
  ;; bf16 where $bf is set, else f16, through $cap
  (func (export "half") (param $src i32) (param $dst i32) (param $groups i32) (param $one i32) (param $bf i32)
    (local $g i32) (local $one4 v128)
    local.get $one
    i32x4.splat
    local.set $one4
    block $done
      local.get $groups
      i32.eqz
      br_if $done
      loop $group
        local.get $dst
        local.get $g
        i32.const 4
        i32.shl
        i32.add
        local.get $src
        local.get $g
        i32.const 5
        i32.shl
        i32.add
        v128.load offset=0
        local.get $bf
        call $half1
        local.get $one4
        call $cap
        local.get $src
        local.get $g
        i32.const 5
        i32.shl
        i32.add
        v128.load offset=16
        local.get $bf
        call $half1
        local.get $one4
        call $cap
        call $pack
        v128.store offset=0
        local.get $g
        i32.const 1
        i32.add
        local.tee $g
        local.get $groups
        i32.ne
        br_if $group
      end
    end)

  ;; dropout on f32 data: x (in the chunk, element-major, replaced by the result) times $scale
  ;; (f32 bits) where (w >> 8) >= $thr, else +0 (also for an infinite or NaN x); element i takes
  ;; word i & 3 of block i >> 2, like rand
  (func $drop (param $x v128) (param $w v128) (param $thr v128) (param $scale v128) (result v128)
    local.get $x
    local.get $scale
    f32x4.mul
    v128.const i32x4 0 0 0 0
    local.get $w
    i32.const 8
    i32x4.shr_u
    local.get $thr
    call $below
    call $select)

  (func (export "dropout") (param $ks i32) (param $b i32) (param $bhi i32) (param $quads i32) (param $out i32) (param $tmp i32)
    (param $thr i32) (param $scale i32)
    (local $q i32) (local $t v128) (local $s v128) (local $at i32)
    local.get $thr
    i32x4.splat
    local.set $t
    local.get $scale
    i32x4.splat
    local.set $s
    block $done
      local.get $quads
      i32.eqz
      br_if $done
      loop $quad
        local.get $ks
        local.get $b
        local.get $q
        call $lanes
        local.get $bhi
        i32x4.splat
        local.get $tmp
        call $philox4
        ;; the words element-major at tmp + 64
        local.get $tmp
        i32.const 64
        i32.add
        local.get $tmp
        v128.load offset=0
        local.get $tmp
        v128.load offset=16
        local.get $tmp
        v128.load offset=32
        local.get $tmp
        v128.load offset=48
        call $transpose
        local.get $out
        local.get $q
        i32.const 6
        i32.shl
        i32.add
        local.set $at
        local.get $at
        local.get $at
        v128.load offset=0
        local.get $tmp
        v128.load offset=64
        local.get $t
        local.get $s
        call $drop
        v128.store offset=0
        local.get $at
        local.get $at
        v128.load offset=16
        local.get $tmp
        v128.load offset=80
        local.get $t
        local.get $s
        call $drop
        v128.store offset=16
        local.get $at
        local.get $at
        v128.load offset=32
        local.get $tmp
        v128.load offset=96
        local.get $t
        local.get $s
        call $drop
        v128.store offset=32
        local.get $at
        local.get $at
        v128.load offset=48
        local.get $tmp
        v128.load offset=112
        local.get $t
        local.get $s
        call $drop
        v128.store offset=48
        local.get $q
        i32.const 1
        i32.add
        local.tee $q
        local.get $quads
        i32.ne
        br_if $quad
      end
    end))
