;; kernels.wat: the CPU's SIMD loops for f32 (WebAssembly SIMD): the binary arithmetic ops
;; (four f32 lanes), exp (two f64 lanes), and the block product of the matmul kernel used where
;; no BLAS is installed (four f32 lanes). Assembled by scripts/wasm/assemble.ts into kernels-wasm.ts; used by
;; src/backends/cpu/wasm-kernels.ts, which lays out the memory and moves the data in and out a
;; block at a time. Every count is in bytes and a multiple of 16 (the caller pads). f32 and f64
;; arithmetic here is IEEE with one rounding per operation and no fused multiply-add.
(module
  (memory (export "memory") 4)

  ;; o[i] = x[i] add y[i] over $n bytes
  (func (export "add_vv") (param $x i32) (param $y i32) (param $o i32) (param $n i32)
    (local $i i32)
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $y
        local.get $i
        i32.add
        v128.load
        f32x4.add
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] add c over $n bytes
  (func (export "add_vs") (param $x i32) (param $c f32) (param $o i32) (param $n i32)
    (local $i i32) (local $cv v128)
    local.get $c
    f32x4.splat
    local.set $cv
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $cv
        f32x4.add
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] sub y[i] over $n bytes
  (func (export "sub_vv") (param $x i32) (param $y i32) (param $o i32) (param $n i32)
    (local $i i32)
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $y
        local.get $i
        i32.add
        v128.load
        f32x4.sub
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] sub c over $n bytes
  (func (export "sub_vs") (param $x i32) (param $c f32) (param $o i32) (param $n i32)
    (local $i i32) (local $cv v128)
    local.get $c
    f32x4.splat
    local.set $cv
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $cv
        f32x4.sub
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] mul y[i] over $n bytes
  (func (export "mul_vv") (param $x i32) (param $y i32) (param $o i32) (param $n i32)
    (local $i i32)
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $y
        local.get $i
        i32.add
        v128.load
        f32x4.mul
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] mul c over $n bytes
  (func (export "mul_vs") (param $x i32) (param $c f32) (param $o i32) (param $n i32)
    (local $i i32) (local $cv v128)
    local.get $c
    f32x4.splat
    local.set $cv
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $cv
        f32x4.mul
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] div y[i] over $n bytes
  (func (export "div_vv") (param $x i32) (param $y i32) (param $o i32) (param $n i32)
    (local $i i32)
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $y
        local.get $i
        i32.add
        v128.load
        f32x4.div
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = x[i] div c over $n bytes
  (func (export "div_vs") (param $x i32) (param $c f32) (param $o i32) (param $n i32)
    (local $i i32) (local $cv v128)
    local.get $c
    f32x4.splat
    local.set $cv
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $o
        local.get $i
        i32.add
        local.get $x
        local.get $i
        i32.add
        v128.load
        local.get $cv
        f32x4.div
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; o[i] = e^x[i] rounded to f32, over $n bytes (cpu/fast-math.ts has the method and the
  ;; constants, and its scalar loop gives the same bits): two values at a time widened to f64;
  ;; k = nearest(64 x / ln 2), r = x - k ln2/64 (in two parts), 2^(k/64) from the table of
  ;; doubles at address 0 (entry k + 10158), e^r by its degree-5 Taylor polynomial
  (func (export "exp") (param $xp i32) (param $o i32) (param $n i32)
    (local $i i32) (local $v v128) (local $x v128) (local $k v128) (local $r v128) (local $ix v128) (local $t v128)
    (local $c_m110f v128) (local $c_100f v128) (local $c_92_33248261689366 v128) (local $c_6755399441055744 v128) (local $c_0_010830424726009369 v128) (local $c_m2_976022379919119em11 v128) (local $c_0_008333333333333333 v128) (local $c_0_041666666666666664 v128) (local $c_0_16666666666666666 v128) (local $c_0_5 v128) (local $c_1 v128)
    ;; the constants, splat once
    f32.const -110
    f32x4.splat
    local.set $c_m110f
    f32.const 100
    f32x4.splat
    local.set $c_100f
    f64.const 92.33248261689366
    f64x2.splat
    local.set $c_92_33248261689366
    f64.const 6755399441055744
    f64x2.splat
    local.set $c_6755399441055744
    f64.const 0.010830424726009369
    f64x2.splat
    local.set $c_0_010830424726009369
    f64.const -2.976022379919119e-11
    f64x2.splat
    local.set $c_m2_976022379919119em11
    f64.const 0.008333333333333333
    f64x2.splat
    local.set $c_0_008333333333333333
    f64.const 0.041666666666666664
    f64x2.splat
    local.set $c_0_041666666666666664
    f64.const 0.16666666666666666
    f64x2.splat
    local.set $c_0_16666666666666666
    f64.const 0.5
    f64x2.splat
    local.set $c_0_5
    f64.const 1
    f64x2.splat
    local.set $c_1
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $l
        local.get $xp
        local.get $i
        i32.add
        v128.load
        ;; x clamped to [-110, 100] (beyond, f32 gives 0 or infinity); pmin and pmax keep a NaN
        local.get $c_m110f
        f32x4.pmax
        local.get $c_100f
        f32x4.pmin
        local.set $v
        local.get $o
        local.get $i
        i32.add
        local.get $v
        f64x2.promote_low_f32x4
        local.tee $x
        ;; t = 64 x / ln 2 + 1.5 2^52: k = t - 1.5 2^52 is the nearest integer, and t's low word is k
        local.get $c_92_33248261689366
        f64x2.mul
        local.get $c_6755399441055744
        f64x2.add
        local.tee $t
        local.get $c_6755399441055744
        f64x2.sub
        local.set $k
        ;; r = (x - k hi) - k lo
        local.get $x
        local.get $k
        local.get $c_0_010830424726009369
        f64x2.mul
        f64x2.sub
        local.get $k
        local.get $c_m2_976022379919119em11
        f64x2.mul
        f64x2.sub
        local.set $r
        ;; the table entry at address 8 (k + 10158), from the low words (lanes 0 and 2)
        local.get $t
        v128.const i32x4 10158 0 10158 0
        i32x4.add
        i32.const 3
        i32x4.shl
        local.tee $ix
        i32x4.extract_lane 2
        local.get $ix
        i32x4.extract_lane 0
        v128.load64_splat
        v128.load64_lane 1
        ;; times p = 1 + r (1 + r (1/2 + r (1/6 + r (1/24 + r / 120))))
        local.get $r
        local.get $c_0_008333333333333333
        f64x2.mul
        local.get $c_0_041666666666666664
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_0_16666666666666666
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_0_5
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_1
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_1
        f64x2.add
        f64x2.mul
        f32x4.demote_f64x2_zero
        local.get $v
        local.get $v
        i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15
        f64x2.promote_low_f32x4
        local.tee $x
        ;; t = 64 x / ln 2 + 1.5 2^52: k = t - 1.5 2^52 is the nearest integer, and t's low word is k
        local.get $c_92_33248261689366
        f64x2.mul
        local.get $c_6755399441055744
        f64x2.add
        local.tee $t
        local.get $c_6755399441055744
        f64x2.sub
        local.set $k
        ;; r = (x - k hi) - k lo
        local.get $x
        local.get $k
        local.get $c_0_010830424726009369
        f64x2.mul
        f64x2.sub
        local.get $k
        local.get $c_m2_976022379919119em11
        f64x2.mul
        f64x2.sub
        local.set $r
        ;; the table entry at address 8 (k + 10158), from the low words (lanes 0 and 2)
        local.get $t
        v128.const i32x4 10158 0 10158 0
        i32x4.add
        i32.const 3
        i32x4.shl
        local.tee $ix
        i32x4.extract_lane 2
        local.get $ix
        i32x4.extract_lane 0
        v128.load64_splat
        v128.load64_lane 1
        ;; times p = 1 + r (1 + r (1/2 + r (1/6 + r (1/24 + r / 120))))
        local.get $r
        local.get $c_0_008333333333333333
        f64x2.mul
        local.get $c_0_041666666666666664
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_0_16666666666666666
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_0_5
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_1
        f64x2.add
        local.get $r
        f64x2.mul
        local.get $c_1
        f64x2.add
        f64x2.mul
        f32x4.demote_f64x2_zero
        i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end
    end
  )

  ;; C += A B on one block, in 4 x 8 tiles. A: $mt panels of 4 rows, each $kc steps of the 4
  ;; rows' values (16 bytes a step). B: $nt panels of 8 columns, each $kc steps of 8 values (32
  ;; bytes a step), panel jt at $b + jt $bstride. C: row-major, $ldc bytes a row. Each tile's
  ;; sums run in order of the k index, one rounding per multiply and per add.
  (func (export "gemm") (param $a i32) (param $b i32) (param $c i32) (param $mt i32) (param $nt i32) (param $kc i32) (param $bstride i32) (param $ldc i32)
    (local $it i32) (local $jt i32) (local $q i32) (local $pa i32) (local $pb i32) (local $pc i32)
    (local $b0 v128) (local $b1 v128) (local $av v128)

    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128) (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)

    block $done
      local.get $mt
      i32.eqz
      br_if $done
      local.get $nt
      i32.eqz
      br_if $done
      local.get $kc
      i32.eqz
      br_if $done
      loop $jloop
        i32.const 0
        local.set $it
        loop $iloop
          ;; pc = c + it 4 ldc + jt 32
          local.get $c
          local.get $it
          i32.const 2
          i32.shl
          local.get $ldc
          i32.mul
          i32.add
          local.get $jt
          i32.const 5
          i32.shl
          i32.add
          local.set $pc
          local.get $pc
          v128.load offset=0
          local.set $c00
          local.get $pc
          v128.load offset=16
          local.set $c01
          local.get $pc
          local.get $ldc
          i32.const 1
          i32.mul
          i32.add
          v128.load offset=0
          local.set $c10
          local.get $pc
          local.get $ldc
          i32.const 1
          i32.mul
          i32.add
          v128.load offset=16
          local.set $c11
          local.get $pc
          local.get $ldc
          i32.const 2
          i32.mul
          i32.add
          v128.load offset=0
          local.set $c20
          local.get $pc
          local.get $ldc
          i32.const 2
          i32.mul
          i32.add
          v128.load offset=16
          local.set $c21
          local.get $pc
          local.get $ldc
          i32.const 3
          i32.mul
          i32.add
          v128.load offset=0
          local.set $c30
          local.get $pc
          local.get $ldc
          i32.const 3
          i32.mul
          i32.add
          v128.load offset=16
          local.set $c31
          ;; pa = a + it 16 kc, pb = b + jt bstride
          local.get $a
          local.get $it
          local.get $kc
          i32.mul
          i32.const 4
          i32.shl
          i32.add
          local.set $pa
          local.get $b
          local.get $jt
          local.get $bstride
          i32.mul
          i32.add
          local.set $pb
          i32.const 0
          local.set $q
          loop $qloop
            local.get $pb
            v128.load
            local.set $b0
            local.get $pb
            v128.load offset=16
            local.set $b1
            local.get $pa
            v128.load32_splat offset=0
            local.set $av
            local.get $c00
            local.get $av
            local.get $b0
            f32x4.mul
            f32x4.add
            local.set $c00
            local.get $c01
            local.get $av
            local.get $b1
            f32x4.mul
            f32x4.add
            local.set $c01
            local.get $pa
            v128.load32_splat offset=4
            local.set $av
            local.get $c10
            local.get $av
            local.get $b0
            f32x4.mul
            f32x4.add
            local.set $c10
            local.get $c11
            local.get $av
            local.get $b1
            f32x4.mul
            f32x4.add
            local.set $c11
            local.get $pa
            v128.load32_splat offset=8
            local.set $av
            local.get $c20
            local.get $av
            local.get $b0
            f32x4.mul
            f32x4.add
            local.set $c20
            local.get $c21
            local.get $av
            local.get $b1
            f32x4.mul
            f32x4.add
            local.set $c21
            local.get $pa
            v128.load32_splat offset=12
            local.set $av
            local.get $c30
            local.get $av
            local.get $b0
            f32x4.mul
            f32x4.add
            local.set $c30
            local.get $c31
            local.get $av
            local.get $b1
            f32x4.mul
            f32x4.add
            local.set $c31
            local.get $pa
            i32.const 16
            i32.add
            local.set $pa
            local.get $pb
            i32.const 32
            i32.add
            local.set $pb
            local.get $q
            i32.const 1
            i32.add
            local.tee $q
            local.get $kc
            i32.lt_u
            br_if $qloop
          end
          local.get $pc
          local.get $c00
          v128.store offset=0
          local.get $pc
          local.get $c01
          v128.store offset=16
          local.get $pc
          local.get $ldc
          i32.const 1
          i32.mul
          i32.add
          local.get $c10
          v128.store offset=0
          local.get $pc
          local.get $ldc
          i32.const 1
          i32.mul
          i32.add
          local.get $c11
          v128.store offset=16
          local.get $pc
          local.get $ldc
          i32.const 2
          i32.mul
          i32.add
          local.get $c20
          v128.store offset=0
          local.get $pc
          local.get $ldc
          i32.const 2
          i32.mul
          i32.add
          local.get $c21
          v128.store offset=16
          local.get $pc
          local.get $ldc
          i32.const 3
          i32.mul
          i32.add
          local.get $c30
          v128.store offset=0
          local.get $pc
          local.get $ldc
          i32.const 3
          i32.mul
          i32.add
          local.get $c31
          v128.store offset=16
          local.get $it
          i32.const 1
          i32.add
          local.tee $it
          local.get $mt
          i32.lt_u
          br_if $iloop
        end
        local.get $jt
        i32.const 1
        i32.add
        local.tee $jt
        local.get $nt
        i32.lt_u
        br_if $jloop
      end
    end
  )
)
