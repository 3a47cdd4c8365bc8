#!/bin/sh
# Runs the golden suite through the OpenCL backend on this machine's OpenCL driver (e.g. NVIDIA's on a GPU box).
# Needs: `mvn -pl kernels-opencl -am package -DskipTests` done beforehand, so target/ holds the jar, the test classes
# (DeviceCheck is one) and target/lib/.
# Usage: kernels-opencl/device-check.sh [device]   device: "platform:device" index or a name substring
# Env:   JAVA (default $JAVA_HOME/bin/java, else java on PATH); KVCHECKSUM_OPENCL_CP replaces the class path
#        (the CUDA device script passes the jars it unpacked from .device/device.tar.xz)
# Exit:  0 passed, 1 a vector failed, 2 no OpenCL on this machine (said plainly), 3 setup failed
set -u
here=$(cd "$(dirname "$0")" && pwd)
java=${JAVA:-}
if [ -z "$java" ]; then
  if [ -n "${JAVA_HOME:-}" ]; then java="$JAVA_HOME/bin/java"; else java=java; fi
fi

# JOCL dlopen()s "libOpenCL.so"; driver installs often have only libOpenCL.so.1 (or the CUDA toolkit's copy).
# Link the first loader found into a private directory on LD_LIBRARY_PATH.
if ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so '; then
  loader=$(ldconfig -p 2>/dev/null | awk '/libOpenCL\.so\.1 /{print $NF; exit}')
  for c in /usr/local/cuda/lib64/libOpenCL.so.1 /usr/local/cuda/targets/x86_64-linux/lib/libOpenCL.so.1; do
    [ -z "$loader" ] && [ -e "$c" ] && loader=$c
  done
  if [ -n "$loader" ]; then
    shim=$(mktemp -d)
    ln -s "$loader" "$shim/libOpenCL.so"
    LD_LIBRARY_PATH="$shim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    echo "device-check: using OpenCL loader $loader"
  fi
fi
# NVIDIA containers may carry the driver's OpenCL library without its ICD file.
if [ -z "${OCL_ICD_VENDORS:-}" ] && ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
  nv=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 /{print $NF; exit}')
  if [ -n "$nv" ]; then
    icd=$(mktemp -d)
    echo "$nv" > "$icd/nvidia.icd"
    OCL_ICD_VENDORS=$icd
    export OCL_ICD_VENDORS
    echo "device-check: no ICD files installed; using $nv"
  fi
fi
cp=${KVCHECKSUM_OPENCL_CP:-"$here/target/test-classes:$here/target/kvchecksum-kernels-opencl-0.1.0-SNAPSHOT.jar:$here/target/lib/*"}
exec "$java" --enable-native-access=ALL-UNNAMED -cp "$cp" io.kvchecksum.opencl.DeviceCheck "$@"
