#!/usr/bin/env bats
# Scale-out past one machine with GNU parallel -S: two ssh "hosts" in
# network namespaces this test makes (veth pairs, addresses inside them
# only), each running its own sshd with keys made in the test's temporary
# folder; everything is removed at the end.

load test_helper

setup() {
    D="$BATS_TEST_TMPDIR/hosts"
    NS="qs$$"
    mkdir -p "$D"
}

teardown() {
    local i
    for i in 1 2; do
        [ -f "$D/sshd$i.pid" ] && kill "$(cat "$D/sshd$i.pid")" 2>/dev/null
        ip netns del "${NS}h$i" 2>/dev/null
        ip link del "${NS}v$i" 2>/dev/null
    done
    true
}

@test "GNU parallel -S host1,host2 --basefile: the same bytes as one qs-score" {
    [ "$(id -u)" = 0 ] || skip "making network namespaces needs root"
    local c
    for c in parallel ssh ssh-keygen /usr/sbin/sshd rsync ip; do
        command -v "$c" >/dev/null || skip "$c is not installed (apt-get install parallel openssh-server openssh-client rsync iproute2)"
    done
    ip netns add "${NS}h1" 2>/dev/null || skip "cannot make network namespaces here"
    # Made is not entered: `ip netns exec` remounts / and /sys, which fails
    # where / is not a mount point (a chroot, some containers).
    local why
    why=$(ip netns exec "${NS}h1" true 2>&1) ||
        skip "cannot enter a network namespace here (ip netns exec: $(printf '%s' "${why:-failed}" | head -n 1))"
    ip netns add "${NS}h2"
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
        ip link set "${NS}p$i" netns "${NS}h$i"
        ip addr add "10.253.$net.$((4 * i - 3))/30" dev "${NS}v$i"
        ip link set "${NS}v$i" up
        ip netns exec "${NS}h$i" ip addr add "10.253.$net.$((4 * i - 2))/30" dev "${NS}p$i"
        ip netns exec "${NS}h$i" ip link set "${NS}p$i" up
        ip netns exec "${NS}h$i" ip link set lo up
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
        ip netns exec "${NS}h$i" /usr/sbin/sshd -f "$D/sshd$i.conf"
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
