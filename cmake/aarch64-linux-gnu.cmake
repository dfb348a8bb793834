# Cross build for aarch64 (scripts/test_aarch64.sh): Debian's cross compiler
# (g++-aarch64-linux-gnu), the arm64 libraries from multiarch (libpcre2-dev:arm64,
# libgtest-dev:arm64, libcpp-httplib-dev:arm64), and qemu-user to run what was built.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Test discovery and ctest run the binaries under qemu, with the arm64 loader and libc of
# multiarch (/lib/ld-linux-aarch64.so.1). Not `-L /usr/aarch64-linux-gnu`: that mixes the
# cross toolchain's loader with multiarch's libc, and the first pthread_create hangs.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Header-only packages (nlohmann-json, CLI11) are found where the host has them; libraries
# only in their arm64 multiarch directories.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
