# Sourced by the build scripts. cmake_generator DIR: the generator option for configuring DIR:
# Ninja (scripts/setup.sh installs it) for a new build directory, nothing for one that exists
# (CMake refuses to switch a configured directory to another generator).
cmake_generator() {
  [ -f "$1/CMakeCache.txt" ] || echo "-G Ninja"
}
