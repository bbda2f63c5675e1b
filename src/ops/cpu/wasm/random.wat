;; random.wat: Philox 4x32-10 on four blocks at once (one block a SIMD lane) and the maps from its
;; words to uniform and normal f32, bit-identical to hip-src/random.hip and to the scalar CPU
;; reference (src/ops/cpu/philox.ts, normal.ts). Assembled by scripts/wasm/assemble.ts into
;; random-wasm.ts; used by src/ops/cpu/random-wasm.ts, which lays out the memory:
;;   $ks: the 20 round keys (k0, k1 of round r at 8r, 8r + 4)
;;   $tab: randn's table (randn-table.ts) less 4064 bytes, so that the byte address of
;;         coefficient 0 of segment (bits(v) >> 20) - 1016 is $tab + ((bits(v) >> 20) << 2)
;;   $out: 64 bytes a quad of blocks, block-major (block b's four values at out + 16 (b - b0))
;; Every exported loop runs $quads quads of blocks from block $b (low 32 bits; the caller keeps
;; $b + 4 $quads within one 2^32 run) with high counter word $bhi. f32 arithmetic in wasm is
;; IEEE single with one rounding per operation and no fused multiply-add, as the kernels'.
(module
  (memory (export "memory") 24)

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
    end))
