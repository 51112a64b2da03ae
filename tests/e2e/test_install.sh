#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `cmake --install --prefix` of the build: libraries only in the private
# <libdir>/uroce (never a libibverbs.so.1 elsewhere), the installed `uroce`
# finds them, the pkg-config file links a program that runs on uroce0
# without LD_LIBRARY_PATH, man pages present. A few seconds.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
BUILD=$(cd "$LIBDIR/.." && pwd)
P=$E2E_TMP/prefix
unset LD_LIBRARY_PATH

e2e_check install cmake --install "$BUILD" --prefix "$P"
e2e_check private_libdir bash -c "
	libs=\$(find '$P' -name 'libibverbs.so*' -o -name 'liburoce-interpose.so')
	[[ -n \$libs ]] || exit 1
	for l in \$libs; do [[ \$(basename \$(dirname \$l)) == uroce ]] || { echo \"outside: \$l\"; exit 1; }; done"
e2e_check installed_run bash -c "'$P/bin/uroce' run -- ibv_devices | grep -q uroce0"
# librdmacm.so.1 too: without it an installed `uroce run -- rping` loads
# the system's, which needs /dev/infiniband/rdma_cm
e2e_check installed_rdmacm bash -c "'$P/bin/uroce' run -- ldd \$(command -v rping || echo /usr/bin/rping) | grep -q \"librdmacm.so.1 => $P/.*/uroce/librdmacm.so.1\""
e2e_check installed_hold bash -c "'$P/bin/uroce' run --hold -- ibv_devices | grep -q uroce0 && [[ -x \$('$P/bin/uroce' libdir)/uroce-hold ]]"
e2e_check installed_cluster bash -c "'$P/bin/uroce' cluster --help | grep -q '^usage: uroce cluster' && [[ -f \$('$P/bin/uroce' libdir)/cluster.sh ]]"
e2e_check installed_libdir bash -c "[[ \$('$P/bin/uroce' libdir) == '$P'/*/uroce ]]"
e2e_check man_pages bash -c "ls '$P'/share/man/man1/uroce.1 '$P'/share/man/man7/uroce.7 && man -l '$P/share/man/man7/uroce.7' 2>/dev/null | grep -q INTERPOSER"
cat >"$E2E_TMP/pc.c" <<'C'
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);

	return !(l && n >= 1 && !strcmp(ibv_get_device_name(l[0]), "uroce0"));
}
C
pcdir=$(dirname "$(find "$P" -name uroce.pc)")
e2e_check pkgconfig_link bash -c "cc '$E2E_TMP/pc.c' -o '$E2E_TMP/pc' \$(PKG_CONFIG_PATH='$pcdir' pkg-config --cflags --libs uroce) && '$E2E_TMP/pc'"
e2e_summary
