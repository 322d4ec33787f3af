#!/bin/sh
# Makes, in DIR (default ./bisect-demo), a git repository of 24 commits of
# a small real program — it writes a 16 MiB file and hashes it — in which
# one commit ("save: check the index twice, to be safe") hashes it a second
# time, and a plan that bisects it on the program's wall time.
#
#   sh examples/bisect/history.sh /tmp/demo
#   iolab bisect /tmp/demo/plan.yaml --good main~23 --bad main
set -eu
dir=${1:-bisect-demo}
mkdir -p "$dir/repo"
cd "$dir/repo"
git init -q -b main
git config user.name demo
git config user.email demo@localhost
cat > save.sh <<'PROG'
#!/bin/sh
# Writes the index and checks it.
out=${TMPDIR:-/tmp}/bisect-demo-index.$$
head -c 16777216 /dev/zero > "$out"
sha256sum "$out" > /dev/null
rm -f "$out"
PROG
echo 'cp save.sh save && chmod +x save' > build.sh
git add -A && git commit -q -m "save: write the index and check it"
i=1
while [ $i -lt 24 ]; do
	if [ $i -eq 17 ]; then
		sed -i 's|^sha256sum "$out" > /dev/null$|sha256sum "$out" > /dev/null\nsha256sum "$out" > /dev/null|' save.sh
		git commit -q -am "save: check the index twice, to be safe"
	else
		echo "$i" > CHANGES
		git add -A && git commit -q -m "docs: change $i"
	fi
	i=$((i + 1))
done
cat > ../plan.yaml <<'PLAN'
name: save
warmup: 1
variants:
  - name: save
    git: {repo: repo, ref: main}
    build: sh build.sh
workloads:
  - name: save
    cmd: {run: ./save}
PLAN
echo "made $dir/repo (24 commits) and $dir/plan.yaml"
