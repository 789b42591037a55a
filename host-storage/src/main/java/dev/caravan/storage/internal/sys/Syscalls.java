package dev.caravan.storage.internal.sys;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Downcall handles for calls the jextract'd bindings do not cover: glibc's variadic functions and
 * {@code syscall(2)} for system calls glibc 2.36 has no wrapper for. Every handle captures errno.
 */
final class Syscalls {
  private static final Linker LINKER = Linker.nativeLinker();

  private Syscalls() {}

  /** {@code long syscall(long number, ...)} with the given argument layouts after the number. */
  static MethodHandle variadic(ValueLayout result, MemoryLayout... numberAndArguments) {
    return variadic("syscall", 1, result, numberAndArguments);
  }

  static MethodHandle variadic(String name, int firstVariadic, ValueLayout result, MemoryLayout... arguments) {
    return LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow(name),
        FunctionDescriptor.of(result, arguments),
        Linker.Option.captureCallState("errno"),
        Linker.Option.firstVariadicArg(firstVariadic));
  }
}
