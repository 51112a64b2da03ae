#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The Debian package (cmake/package.cmake, docs/packaging.md): cpack makes
# one .deb from the build's install rules; it holds the private library
# directory, the `uroce` command, the man pages and uroce.pc and nothing
# else, shares no file with an installed package (rdma-core's
# libibverbs1 and librdmacm1 above all) and does not Provide, Replace or
# Conflict with them; extracted (dpkg-deb -x) into a directory, its
# command finds its own libraries and runs a program on uroce0. Seconds.
# E2E_PACKAGE=system (ctest entry e2e_package_system) instead installs it
# into the system with dpkg -i, checks it there and purges it again; as
# that changes the machine it runs only with UROCE_DEB_SYSTEM=1, or in CI
# (CI=true, as root, no uroce package installed already), and skips
# otherwise.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
BUILD=$(cd "$LIBDIR/.." && pwd)
unset LD_LIBRARY_PATH

# into the system, and out again (E2E_PACKAGE=system)
system_part() {
	local sys=${UROCE_DEB_SYSTEM:-} before
	if [[ -z $sys ]]; then
		sys=0
		[[ ${CI:-} == true && $(id -u) == 0 ]] &&
			! dpkg-query -W -f='${Status}' uroce 2>/dev/null | grep -q 'ok installed' &&
			sys=1
	fi
	if [[ $sys != 1 ]]; then
		e2e_skip system_install "dpkg -i only in CI or with UROCE_DEB_SYSTEM=1 (it changes the machine)"
		return
	fi
	if [[ $(id -u) != 0 ]]; then
		e2e_skip system_install "dpkg -i needs root"
		return
	fi
	sysverbs() { ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }'; }
	before=$(sysverbs)
	# dpkg's lock may be held a moment by another installation: only
	# that is tried again
	e2e_check system_install bash -c "for i in 1 2 3 4 5 6; do
		dpkg -i '$deb' >'$E2E_TMP/dpkg.out' 2>&1 && exit 0
		grep -q 'lock' '$E2E_TMP/dpkg.out' || break
		sleep 10
	done; cat '$E2E_TMP/dpkg.out'; exit 1"
	e2e_check system_run bash -c "[[ \$(/usr/bin/uroce libdir) == /usr/lib/*uroce ]] &&
		{ ! command -v ibv_devices >/dev/null || /usr/bin/uroce run -- ibv_devices | grep -q uroce0; }"
	# the system's own libibverbs.so.1 is still the one the loader finds
	e2e_check system_keeps_rdma_core bash -c "[[ '$(sysverbs)' == '$before' ]] &&
		[[ \$(dpkg-query -S \"\$(readlink -f '$before')\") != uroce:* ]]"
	e2e_check system_remove bash -c "dpkg --purge uroce && [[ ! -e /usr/bin/uroce ]] &&
		! ls -d /usr/lib/uroce /usr/lib/*/uroce 2>/dev/null"
}

for c in cpack dpkg-deb dpkg-query; do
	if ! command -v $c >/dev/null; then
		e2e_skip package "no $c (Debian's cmake and dpkg)"
		e2e_summary
		exit
	fi
done
[[ -r $BUILD/CPackConfig.cmake ]] || { echo "FAIL: no $BUILD/CPackConfig.cmake"; exit 1; }

e2e_check build cpack --config "$BUILD/CPackConfig.cmake" -B "$E2E_TMP/pkg"
deb=$(ls "$E2E_TMP"/pkg/uroce_*.deb 2>/dev/null)
e2e_check one_deb test "$(wc -w <<<"$deb")" -eq 1
deb=${deb%% *}
if [[ ${E2E_PACKAGE:-} == system ]]; then
	system_part
	e2e_summary
	exit
fi
dpkg-deb -f "$deb" >"$E2E_TMP/control" 2>&1
# what the package declares: itself, never a stand-in for rdma-core
e2e_check control bash -c "
	grep -qx 'Package: uroce' '$E2E_TMP/control' &&
	grep -q '^Depends: .*libisal' '$E2E_TMP/control' &&
	! grep -Ei '^(Provides|Replaces|Conflicts|Breaks):' '$E2E_TMP/control' &&
	! grep -Ei '^(Pre-)?Depends:.*(libibverbs|librdmacm|rdma-core)' '$E2E_TMP/control'"
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | grep -v '/$' \
	>"$E2E_TMP/files"
# every file in its place: the libraries only in the private directory
e2e_check contents bash -c "
	f='$E2E_TMP/files'
	for want in /usr/bin/uroce /usr/share/man/man1/uroce.1 \
		/usr/share/man/man7/uroce.7; do
		grep -qx \"\$want\" \"\$f\" || { echo \"missing \$want\"; exit 1; }
	done
	for want in libibverbs.so.1 librdmacm.so.1 liburoce-interpose.so uroce-hold cluster.sh; do
		grep -qE \"^/usr/lib/([^/]+/)?uroce/\$want\\\$\" \"\$f\" ||
			{ echo \"missing <libdir>/uroce/\$want\"; exit 1; }
	done
	grep -qE '^/usr/lib/([^/]+/)?pkgconfig/uroce.pc$' \"\$f\" || { echo 'no uroce.pc'; exit 1; }
	! grep -vE '^/usr/(bin/uroce|share/man/man[17]/uroce\.[17]|lib/([^/]+/)?(uroce/[^/]+|pkgconfig/uroce\.pc))$' \"\$f\""
# no file of the package belongs to an installed package (a copy of this
# one installed by hand aside)
e2e_check no_shared_files bash -c "
	while read -r p; do
		o=\$(dpkg-query -S \"\$p\" 2>/dev/null) || continue
		[[ \${o%%:*} == uroce ]] || { echo \"\$p belongs to \$o\"; exit 1; }
	done <'$E2E_TMP/files'"

# extracted: the command finds the package's libraries beside it
R=$E2E_TMP/root
e2e_check extract dpkg-deb -x "$deb" "$R"
e2e_check extracted_libdir bash -c "[[ \$('$R/usr/bin/uroce' libdir) == '$R'/usr/lib/*uroce ]]"
if command -v ibv_devices >/dev/null; then
	e2e_check extracted_run bash -c "'$R/usr/bin/uroce' run -- ibv_devices | grep -q uroce0"
else
	e2e_skip extracted_run "no ibv_devices (package ibverbs-utils)"
fi
e2e_check extracted_man bash -c "
	man -l '$R/usr/share/man/man1/uroce.1' 2>/dev/null | grep -q 'uroce run' &&
	man -l '$R/usr/share/man/man7/uroce.7' 2>/dev/null | grep -q UROCE_ADDRS"

e2e_summary
