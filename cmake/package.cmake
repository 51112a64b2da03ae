# SPDX-License-Identifier: BSD-2-Clause
# The Debian package: the install rules (tools/CMakeLists.txt) as a .deb,
# made by CPack's DEB generator: `cpack --config <build>/CPackConfig.cmake`
# or `ninja -C <build> package` (docs/packaging.md).
#
# CPack rather than a debian/ directory: the package must hold exactly what
# `cmake --install` puts down (the private <libdir>/uroce, the `uroce`
# command, the man pages, uroce.pc), and CPack packs those very rules, so
# the two cannot drift apart; it needs only cmake and dpkg, both already
# here, not debhelper and a source-package build. A debian/ directory is
# the way into the Debian archive (source package, policy, lintian), which
# is not this package's purpose.
#
# It never replaces rdma-core: its libibverbs.so.1 and librdmacm.so.1 live
# only in /usr/lib/uroce (no file of rdma-core's packages, no ldconfig
# path), and it neither Provides, Replaces nor Conflicts with libibverbs1
# or librdmacm1. Programs get it through `uroce run` or uroce.pc.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME uroce)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "software RoCEv2 NIC in user space, behind libibverbs and librdmacm")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "uroce is libibverbs.so.1 and librdmacm.so.1 with a software RoCEv2
device (UDP port 4791) inside, for running unmodified RDMA programs
without an RDMA NIC, kernel module or root. The libraries are installed
in a private directory, beside the system's rdma-core: programs use them
through the `uroce run` command or the uroce pkg-config file.")
set(UROCE_DEB_MAINTAINER "uroce maintainers <uroce@localhost>" CACHE STRING
  "Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${UROCE_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# the debug information stays in the build tree
set(CPACK_STRIP_FILES ON)
# Depends from the libraries' own needs (libc6, libisal2), by
# dpkg-shlibdeps; the private directory is where the package's own
# libraries are found, so librdmacm's need of libibverbs.so.1 is met
# inside the package and not by a dependency on rdma-core's libibverbs1.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
  ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/uroce
  /usr/${CMAKE_INSTALL_LIBDIR}/uroce)
# `uroce devices` runs ibv_devinfo; `uroce run --rsocket` preloads
# rdma-core's librspreload.so
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-utils")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "librdmacm1, rdmacm-utils, perftest")
include(CPack)
