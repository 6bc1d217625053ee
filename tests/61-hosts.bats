#!/usr/bin/env bats
# Scale-out past one machine with GNU parallel -S: two ssh "hosts" in
# network namespaces this test makes (veth pairs, addresses inside them
# only), each running its own sshd with keys made in the test's temporary
# folder; everything is removed at the end.
#
# Each namespace is held by a process of its own (unshare --net) and entered
# with nsenter, not made with `ip netns add`: that one mounts /run/netns
# (a mount `ip netns del` leaves behind), and `ip netns exec` remounts /sys,
# which fails in a chroot.  This way the test makes no mount at all, and
# the namespaces go with the processes that hold them.

load test_helper

setup_file() {
    # the namespace mounts before (the last test: none added)
    ns_mounts > "$BATS_FILE_TMPDIR/mounts.before"
}

# ns_mounts: the mounts of network namespaces (nsfs) and of /run/netns, the
# kind `ip netns add` makes and `ip netns del` leaves (only these: suites
# running beside this one may mount other things meanwhile)
ns_mounts() {
    awk '{ for (i = 7; $i != "-"; i++) ; if ($(i + 1) == "nsfs" || $5 ~ /^\/run\/netns(\/|$)/) print $5, $(i + 1) }' \
        /proc/self/mountinfo | sort
}

setup() {
    D="$BATS_TEST_TMPDIR/hosts"
    NS="qs$$"
    HOLDERS=()
    mkdir -p "$D"
}

teardown() {
    local i
    for i in 1 2; do
        [ -f "$D/sshd$i.pid" ] && kill "$(cat "$D/sshd$i.pid")" 2>/dev/null
        ip link del "${NS}v$i" 2>/dev/null
    done
    for i in "${HOLDERS[@]}"; do
        kill "$i" 2>/dev/null && wait "$i" 2>/dev/null
    done
    true
}

# netns_hold I: start a process in a network namespace of its own (it
# sleeps until teardown kills it) and set H[I] to its process id once it is
# in there.
netns_hold() {
    unshare --net sleep 100000 < /dev/null > /dev/null 2>&1 3>&- &
    local pid=$! n=0
    HOLDERS+=("$pid")
    # unshare has run once the process's namespace differs from ours
    while [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$(readlink /proc/self/ns/net)" ]; do
        kill -0 "$pid" 2>/dev/null || return 1
        n=$((n + 1))
        [ "$n" -lt 200 ] || return 1
        sleep 0.05
    done
    [ -e "/proc/$pid/ns/net" ] || return 1
    H[$1]=$pid
    echo "$pid" >> "$BATS_FILE_TMPDIR/holders"
}

# in_host I COMMAND...: run COMMAND in host I's network namespace
in_host() {
    local i="$1"
    shift
    nsenter --target "${H[$i]}" --net "$@"
}

@test "GNU parallel -S host1,host2 --basefile: the same bytes as one qs-score" {
    [ "$(id -u)" = 0 ] || skip "making network namespaces needs root"
    local c
    for c in parallel ssh ssh-keygen /usr/sbin/sshd rsync ip unshare nsenter; do
        command -v "$c" >/dev/null || skip "$c is not installed (apt-get install parallel openssh-server openssh-client rsync iproute2 util-linux)"
    done
    local why
    why=$(unshare --net true 2>&1) ||
        skip "cannot make network namespaces here (unshare --net: $(printf '%s' "${why:-failed}" | head -n 1))"
    [ -e /proc/self/ns/net ] || skip "no /proc/self/ns/net (/proc is not mounted)"
    H=()
    netns_hold 1 && netns_hold 2 ||
        { echo "could not start a process in a network namespace of its own"; return 1; }
    echo "$NS" > "$BATS_FILE_TMPDIR/prefix"
    mkdir -p /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$D/id"
    ssh-keygen -q -t ed25519 -N '' -f "$D/hostkey"
    cp "$D/id.pub" "$D/authorized_keys"
    : > "$D/ssh_config"
    # Two /30 subnets of 10.253.N.0/24, N from the process id, so that two
    # suites running at once on one machine do not share addresses.
    local i net=$(( $$ % 250 ))
    for i in 1 2; do
        ip link add "${NS}v$i" type veth peer name "${NS}p$i"
        ip link set "${NS}p$i" netns "${H[$i]}"
        ip addr add "10.253.$net.$((4 * i - 3))/30" dev "${NS}v$i"
        ip link set "${NS}v$i" up
        in_host $i ip addr add "10.253.$net.$((4 * i - 2))/30" dev "${NS}p$i"
        in_host $i ip link set "${NS}p$i" up
        in_host $i ip link set lo up
        cat > "$D/sshd$i.conf" <<CONF
ListenAddress 10.253.$net.$((4 * i - 2))
Port 22
HostKey $D/hostkey
AuthorizedKeysFile $D/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $D/sshd$i.pid
CONF
        in_host $i /usr/sbin/sshd -f "$D/sshd$i.conf"
        cat >> "$D/ssh_config" <<CONF
Host host$i
    HostName 10.253.$net.$((4 * i - 2))
    User root
    IdentityFile $D/id
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    BatchMode yes
    ConnectTimeout 10
CONF
    done
    # the hosts answer
    for i in 1 2; do
        timeout 20 ssh -F "$D/ssh_config" "host$i" true
    done
    local q="$BATS_TEST_TMPDIR/m.qsm"
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$q" "$BATS_TEST_TMPDIR/m.txt"
    for i in 1 2 3 4 5 6; do cat "$FIX/lgb-l8/docs.letor"; done > "$BATS_TEST_TMPDIR/docs"
    qs-score --threads 1 "$q" < "$BATS_TEST_TMPDIR/docs" > "$BATS_TEST_TMPDIR/want"
    # The model goes to each host's working folder by --basefile; the hosts
    # share this file system, so the folder is one of the test's own.
    mkdir -p "$D/work"
    (cd "$BATS_TEST_TMPDIR" && timeout 120 parallel --will-cite --ssh "ssh -F $D/ssh_config" \
        -S host1,host2 --workdir "$D/work" --basefile m.qsm --joblog "$D/jobs" \
        --pipe --block 15k -k \
        "$QS_ROOT/bin/qs-score" --threads 1 m.qsm < docs > got)
    cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
    # both hosts scored blocks
    grep -q "host1" "$D/jobs"
    grep -q "host2" "$D/jobs"
}

@test "the hosts are gone: no process holding a namespace, no link, no mount left behind" {
    [ -f "$BATS_FILE_TMPDIR/holders" ] || skip "the hosts test did not make its hosts"
    local pid ns
    ns=$(cat "$BATS_FILE_TMPDIR/prefix")
    while read -r pid; do
        if [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = sleep ]; then
            echo "process $pid, which held a namespace, is still running"
            return 1
        fi
    done < "$BATS_FILE_TMPDIR/holders"
    run ip -o link show
    assert_success
    refute_output --partial "$ns"
    # no namespace mounted, no /run/netns mount, since the file began
    ns_mounts > "$BATS_FILE_TMPDIR/mounts.after"
    run comm -13 "$BATS_FILE_TMPDIR/mounts.before" "$BATS_FILE_TMPDIR/mounts.after"
    assert_success
    assert_output ""
}
