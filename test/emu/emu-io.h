// emu-io.h: the host emulators' conversions between double and each storage type, with its
// name; each emulator derives its Io<T> from these and adds its own tolerance. Include after the
// kernel source (compat.h's f16 and bf16 conversions).
#pragma once

template <class T> struct EmuIo;
template <> struct EmuIo<float> {
  static constexpr const char* name = "f32";
  static float put(double v) { return (float)v; }
  static double get(float v) { return v; }
};
template <> struct EmuIo<double> {
  static constexpr const char* name = "f64";
  static double put(double v) { return v; }
  static double get(double v) { return v; }
};
template <> struct EmuIo<f16> {
  static constexpr const char* name = "f16";
  static f16 put(double v) { return f64_to_f16(v); }
  static double get(f16 v) { return f16_to_f32(v); }
};
template <> struct EmuIo<bf16> {
  static constexpr const char* name = "bf16";
  static bf16 put(double v) { return f64_to_bf16(v); }
  static double get(bf16 v) { return bf16_to_f32(v); }
};
