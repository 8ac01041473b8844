#!/bin/sh
# bench/postgis_join.sh: issue 29's PostGIS comparison. PostGIS (Debian postgresql-15-postgis-3,
# GiST indexes) on a throw-away cluster that this script starts and stops, against our CPU backend
# (bench/geos_join.c, --engines raydex: our rdx_join_polygons) on the same .rdxp files and the same
# geometries, with GEOS's answers and times too when ENGINES=geos,raydex.
#
#   bench/postgis_join.sh [R:S ...]   every pair (default: the three of the issue, below), each
#                                     polygon join; rows into bench/results/<cpu>/
#                                     join_polygons_postgis.csv, the commands into that folder's
#                                     COMMANDS.md ("join_polygons_postgis" section)
#
# What it does, per pair:
#  1. BUILD/geos_join --dump-wkt-r/-s: both layers as "id<TAB>WKT" (id: the feature's position in
#     the layer, as in our answers; the GEOS geometries geos_join.c makes from the layer's rings,
#     coordinates with %.17g, so PostGIS parses exactly the doubles we join).
#  2. load (timed apart, the load_ms column, once per pair and table): \copy into a text table,
#     CREATE TABLE r AS SELECT id, ST_GeomFromText(wkt), a GiST index on geom, ANALYZE.
#  3. each join, as a PostGIS user writes it (ORDER BY r.id, s.id; COPY ... TO STDOUT):
#       overlay     ON ST_Intersects(r.geom, s.geom) AND ST_Relate(r.geom, s.geom, 'T********')
#       intersects  ON ST_Intersects(r.geom, s.geom)
#       contains    ON ST_Contains(r.geom, s.geom)
#       within      ON ST_Within(r.geom, s.geom)
#       areas       overlay's join, selecting ST_Area(ST_Intersection(r.geom, s.geom))
#     query_ms: psql's \timing of the statement (server execution and the transfer of the rows);
#     wall_ms: the psql process, connection included. A statement runs at most TIMEOUT_MIN minutes
#     (statement_timeout); a row that reaches it says "timeout" with the time reached.
#     When a statement fails (GEOS throws a TopologyException on some invalid features, and one
#     failing pair fails the whole statement in PostgreSQL), it is run again with each predicate
#     (and the intersection) in a PL/pgSQL wrapper that returns NULL on an exception: mode "safe"
#     (slower: a subtransaction per call), the NULL pairs counted as undecided.
#  4. our answers and times: BUILD/geos_join --engines $ENGINES --pairs-out (its rows, their
#     columns as in join_polygons_geos.csv, go to the log; their times and a row per op into the
#     CSV, engine raydex-cpu), then each PostGIS answer compared with ours: check "same" or
#     "DIFF=N" (pairs in one answer only, GEOS's undecided pairs left out when ENGINES has geos),
#     areas within 1e-9 relative (max_rel_area_diff); the first differing pairs go to the log
#     with ST_IsValid and ST_IsValidReason of both features.
#  5. the cluster is stopped and its folder deleted on exit, failure and interrupt included.
#
# Environment:
#   BUILD=build-geosbench  geos_join's build (bench/geos_join.sh build makes it)
#   MAPS=.cache/maps       the .rdxp maps of scripts/fetch-maps.sh
#   OPS=overlay,intersects,contains,within,areas
#   ENGINES=raydex         geos_join's engines (geos,raydex adds GEOS's rows to the log)
#   REPS=3 WARMUP=1        our runs per row (median) and untimed runs; a pair with
#                          countries-land-10m takes BIG_REPS=1 BIG_WARMUP=0. PostGIS: one run per
#                          query, after the load (the tables are then in shared buffers or the
#                          page cache; GEOS's prepared-geometry cache in PostGIS warms within it)
#   THREADS=0              our CPU backend's threads (0: one per core)
#   TIMEOUT_MIN=20         PostGIS's statement_timeout, minutes; GEOS's polygon joins stop at the
#                          same time (geos_join --geos-limit-s, checked between S features)
#   APPEND=1               add rows to the CSVs (else they are started afresh) and this run's
#                          commands to the COMMANDS.md section NOTE_TAG (default
#                          join_polygons_postgis; replaced by each run without APPEND)
#   RESULTS                the folder written (default bench/results/cpu-<model>-<cores>-cores)
#   KEEP_TMP=1             keep the temporary folder (WKT, answers, server log) for a look
# Runs as root (it installs the packages when missing) and runs the server as user postgres.
set -eu
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build-geosbench}
MAPS=${MAPS:-.cache/maps}
OPS=${OPS:-overlay,intersects,contains,within,areas}
ENGINES=${ENGINES:-raydex}
REPS=${REPS:-3}
WARMUP=${WARMUP:-1}
BIG_REPS=${BIG_REPS:-1}
BIG_WARMUP=${BIG_WARMUP:-0}
THREADS=${THREADS:-0}
TIMEOUT_MIN=${TIMEOUT_MIN:-20}
PG=/usr/lib/postgresql/15/bin
BIN=$BUILD/geos_join
PAIRS=${*:-us-states:us-counties world-countries-10m:world-countries-50m countries-maritime-10m:countries-land-10m}

say() { echo "postgis_join.sh: $*" >&2; }

# 0. what it needs
if [ ! -x "$PG/initdb" ] || [ ! -f /usr/share/postgresql/15/extension/postgis.control ]; then
  say "installing postgresql-15-postgis-3 postgresql-client-15"
  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-15-postgis-3 postgresql-client-15 >/dev/null
fi
id postgres >/dev/null 2>&1 || { say "no user postgres (the Debian package makes it)"; exit 1; }
sh bench/geos_join.sh build

cpu_dir() {
  name=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 |
    sed 's/([RrTtMm]*)//g; s/ Processor.*//; s/ CPU .*//; s/[^A-Za-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
  echo "bench/results/cpu-${name:-unknown}-$(nproc)-cores"
}
DIR=${RESULTS:-$(cpu_dir)}
mkdir -p "$DIR"
CSV=$DIR/join_polygons_postgis.csv
LOG=$BUILD/join_polygons_postgis.log
CMDS=$BUILD/join_polygons_postgis.commands
: >"$LOG"
: >"$CMDS"
APPEND=${APPEND:-0}
NOTE_TAG=${NOTE_TAG:-join_polygons_postgis}
[ "$APPEND" = 1 ] || : >"$CSV"

# 1. the throw-away cluster: a unix socket in its folder, no TCP
TMP=$(mktemp -d /tmp/postgis_join.XXXXXX)
chmod 755 "$TMP"
mkdir "$TMP/data"
chown postgres "$TMP" "$TMP/data"
cleanup() {
  rc=$?
  if [ -f "$TMP/data/postmaster.pid" ]; then
    runuser -u postgres -- "$PG/pg_ctl" -D "$TMP/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  if [ "${KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
runuser -u postgres -- "$PG/initdb" -D "$TMP/data" -A trust -U postgres --no-sync >>"$LOG" 2>&1
# jit off: it compiles expressions only (no help to the GEOS calls) and adds its compile time to
# every costly statement; fsync off: the tables are thrown away
SETTINGS="-c listen_addresses= -c unix_socket_directories=$TMP -c fsync=off -c jit=off -c shared_buffers=1GB -c work_mem=256MB -c statement_timeout=${TIMEOUT_MIN}min"
runuser -u postgres -- "$PG/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -o "$SETTINGS" start >>"$LOG" 2>&1 ||
  { cat "$TMP/server.log" >&2; exit 1; }
PSQL="psql -X -q -h $TMP -U postgres -d postgres -v ON_ERROR_STOP=1"
$PSQL -c 'CREATE EXTENSION postgis' >>"$LOG"
# the safe wrappers: NULL where GEOS throws
$PSQL >>"$LOG" <<'SQL'
CREATE FUNCTION safe_pred(op text, a geometry, b geometry) RETURNS boolean AS $$
BEGIN
  IF op = 'intersects' THEN RETURN ST_Intersects(a, b);
  ELSIF op = 'contains' THEN RETURN ST_Contains(a, b);
  ELSIF op = 'within' THEN RETURN ST_Within(a, b);
  ELSE RETURN ST_Intersects(a, b) AND ST_Relate(a, b, 'T********');
  END IF;
EXCEPTION WHEN OTHERS THEN RETURN NULL;
END $$ LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION safe_area(a geometry, b geometry) RETURNS double precision AS $$
BEGIN RETURN ST_Area(ST_Intersection(a, b));
EXCEPTION WHEN OTHERS THEN RETURN 'NaN';
END $$ LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE;
SQL
VERSIONS=$($PSQL -At -c "SELECT split_part(version(), ',', 1) || '; PostGIS ' || postgis_lib_version() || ', GEOS ' || postgis_geos_version()")
say "$VERSIONS; cluster in $TMP"

now_ms() { date +%s%3N; }
map() { echo "$MAPS/$1.rdxp"; }

# the SQL of each join (plain, and safe: one row per candidate pair with the verdict)
query() { # op mode
  case "$1:$2" in
    overlay:plain) echo "SELECT r.id, s.id FROM r JOIN s ON ST_Intersects(r.geom, s.geom) AND ST_Relate(r.geom, s.geom, 'T********') ORDER BY 1, 2" ;;
    intersects:plain) echo "SELECT r.id, s.id FROM r JOIN s ON ST_Intersects(r.geom, s.geom) ORDER BY 1, 2" ;;
    contains:plain) echo "SELECT r.id, s.id FROM r JOIN s ON ST_Contains(r.geom, s.geom) ORDER BY 1, 2" ;;
    within:plain) echo "SELECT r.id, s.id FROM r JOIN s ON ST_Within(r.geom, s.geom) ORDER BY 1, 2" ;;
    areas:plain) echo "SELECT r.id, s.id, ST_Area(ST_Intersection(r.geom, s.geom)) FROM r JOIN s ON ST_Intersects(r.geom, s.geom) AND ST_Relate(r.geom, s.geom, 'T********') ORDER BY 1, 2" ;;
    areas:safe) echo "SELECT id_r, id_s, CASE WHEN v IS NULL THEN 'undecided' ELSE safe_area(gr, gs)::text END FROM (SELECT r.id id_r, s.id id_s, r.geom gr, s.geom gs, safe_pred('overlay', r.geom, s.geom) v FROM r JOIN s ON r.geom && s.geom) q WHERE v IS NULL OR v ORDER BY 1, 2" ;;
    *:safe) echo "SELECT r.id, s.id, CASE WHEN v IS NULL THEN 'undecided' ELSE 'yes' END FROM r JOIN s ON r.geom && s.geom, LATERAL (SELECT safe_pred('$1', r.geom, s.geom) v) p WHERE v IS NULL OR v ORDER BY 1, 2" ;;
  esac
}

# one statement into $2 (tab-separated), its \timing into QMS, the psql process into WMS; status
# 0 done, 1 failed, 2 timed out (the error in $2.err)
run_sql() { # sql out
  t0=$(now_ms)
  st=0
  $PSQL -At -F '	' >"$2.timing" 2>"$2.err" <<SQL || st=1
\timing on
\o $2
$1;
SQL
  WMS=$(($(now_ms) - t0))
  QMS=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$2.timing" | tail -1)
  [ -n "$QMS" ] || QMS=$WMS
  if [ "$st" = 1 ] && grep -q 'statement timeout' "$2.err"; then st=2; fi
  return "$st"
}

# the first differing pairs, with PostGIS's validity of both features
show_diffs() { # file of "r<TAB>s<TAB>which" lines
  head -8 "$1" | while IFS='	' read -r a b which; do
    v=$($PSQL -At -F ' ' -c "SELECT 'R ' || ST_IsValidReason(geom) FROM r WHERE id = $a UNION ALL SELECT 'S ' || ST_IsValidReason(geom) FROM s WHERE id = $b" | tr '\n' ';')
    echo "postgis_join.sh: DIFF $OP $RNAME:$SNAME pair ($a, $b): $which; validity (PostGIS): $v" >>"$LOG"
  done
}

# compare PGFILE OTHER SKIP1 SKIP2 DIFFS NAME: "n_diff n_area max_rel" on stdout; each difference
# ("r<TAB>s<TAB>what") into DIFFS. Pairs in SKIP1 or SKIP2 (undecided) are left out; areas (the
# third column of PGFILE and OTHER) compared within 1e-9 relative.
compare() {
  awk -v pgf="$1" -v ouf="$2" -v skipf="$3" -v skip2="$4" -v diffs="$5" -v name="$6" '
    BEGIN {
      while ((getline l < skipf) > 0) { split(l, f, "\t"); skip[f[1] "\t" f[2]] = 1 }
      while ((getline l < skip2) > 0) { split(l, f, "\t"); skip[f[1] "\t" f[2]] = 1 }
      while ((getline l < pgf) > 0) { split(l, f, "\t"); k = f[1] "\t" f[2]; pg[k] = 1; pa[k] = f[3] }
      while ((getline l < ouf) > 0) { split(l, f, "\t"); k = f[1] "\t" f[2]; ou[k] = 1; oa[k] = f[3] }
      n = 0; maxrel = 0; na = 0
      for (k in pg) if (!(k in ou) && !(k in skip)) { n++; print k "\tPostGIS has it, " name " has not" > diffs }
      for (k in ou) if (!(k in pg) && !(k in skip)) { n++; print k "\t" name " has it, PostGIS has not" > diffs }
      for (k in pg) if ((k in ou) && pa[k] != "" && pa[k] != "NaN" && oa[k] != "" && oa[k] != "nan") {
        a = pa[k] + 0; b = oa[k] + 0; m = (a < 0 ? -a : a); mb = (b < 0 ? -b : b); if (mb > m) m = mb
        d = a - b; if (d < 0) d = -d
        rel = m > 0 ? d / m : 0
        if (rel > maxrel) maxrel = rel
        if (rel > 1e-9) { na++; print k "\tarea: PostGIS " pa[k] ", " name " " oa[k] > diffs }
      }
      printf "%d %d %.3g\n", n, na, maxrel
    }' </dev/null
}

[ -s "$CSV" ] || echo "date,device,engine,threads,op,r,s,r_features,s_features,load_ms,query_ms,wall_ms,results,undecided,max_rel_area_diff,vs_postgis,check,mode,load1" >"$CSV"
START=$(date -u '+%Y-%m-%d %H:%M UTC')
DATE=$(date -u +%Y-%m-%d)
DEVICE=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 | tr ',' ' ')
FAILED=0
GCSV=
case "$ENGINES" in *geos*) GCSV=$DIR/join_polygons_geos.csv; [ "$APPEND" = 1 ] || : >"$GCSV" ;; esac
for p in $PAIRS; do
  R=${p%%:*} S=${p#*:}
  RNAME=$(basename "$(map "$R")") SNAME=$(basename "$(map "$S")")
  for m in "$R" "$S"; do [ -f "$(map "$m")" ] || { say "no $(map "$m") (scripts/fetch-maps.sh makes it)"; exit 1; }; done
  reps=$REPS warmup=$WARMUP
  if [ "$R" = countries-land-10m ] || [ "$S" = countries-land-10m ]; then reps=$BIG_REPS warmup=$BIG_WARMUP; fi
  W=$TMP/$R.$S
  mkdir -p "$W/pairs"
  chmod -R a+rX "$W"

  # ours (and GEOS's) first: the pairs to compare and our times
  cmd="$BIN --op $OPS --r $(map "$R") --s $(map "$S") --reps $reps --warmup $warmup --engines $ENGINES --geos-threads 1 --geos-limit-s $((TIMEOUT_MIN * 60)) --threads $THREADS --header --pairs-out PAIRS_DIR"
  echo "$cmd    # load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$CMDS"
  say "$R ⋈ $S: ours ($ENGINES)"
  rc=0
  $(echo "$cmd" | sed "s|PAIRS_DIR|$W/pairs|") >"$W/ours.csv" 2>>"$LOG" || rc=$?
  [ "$rc" -le 1 ] || { say "geos_join failed ($rc), see $LOG"; FAILED=1; continue; }
  cat "$W/ours.csv" >>"$LOG"
  if [ -n "$GCSV" ]; then
    [ -s "$GCSV" ] || head -1 "$W/ours.csv" >"$GCSV"
    tail -n +2 "$W/ours.csv" >>"$GCSV"
  fi

  # the load, timed apart
  say "$R ⋈ $S: loading into PostGIS"
  "$BIN" --r "$(map "$R")" --s "$(map "$S")" --dump-wkt-r "$W/r.tsv" --dump-wkt-s "$W/s.tsv" 2>>"$LOG"
  for t in r s; do
    t0=$(now_ms)
    $PSQL >>"$LOG" <<SQL
DROP TABLE IF EXISTS $t, ${t}_wkt;
CREATE TABLE ${t}_wkt (id bigint, wkt text);
\\copy ${t}_wkt FROM '$W/$t.tsv'
CREATE TABLE $t AS SELECT id, ST_GeomFromText(wkt) AS geom FROM ${t}_wkt;
DROP TABLE ${t}_wkt;
CREATE INDEX ${t}_geom ON $t USING gist (geom);
ANALYZE $t;
SQL
    eval "LOAD_$t=$(($(now_ms) - t0))"
  done
  NR=$($PSQL -At -c 'SELECT count(*) FROM r') NS=$($PSQL -At -c 'SELECT count(*) FROM s')
  say "$R ⋈ $S: loaded ($NR and $NS features with rings) in $LOAD_r + $LOAD_s ms"

  for OP in $(echo "$OPS" | tr ',' ' '); do
    ours=$W/pairs/$OP.raydex.tsv
    undec=$W/pairs/$OP.geos-undecided.tsv
    mode=plain
    say "$R ⋈ $S: $OP (load average $(cut -d' ' -f1 /proc/loadavg))"
    out=$W/$OP.postgis
    st=0
    run_sql "$(query "$OP" plain)" "$out" || st=$?
    if [ "$st" = 1 ]; then
      echo "postgis_join.sh: $OP $RNAME:$SNAME plain query failed after $QMS ms: $(head -1 "$out.err")" >>"$LOG"
      mode=safe
      st=0
      run_sql "$(query "$OP" safe)" "$out" || st=$?
    fi
    L1=$(cut -d' ' -f1 /proc/loadavg)
    ours_ms=$(awk -F, -v op="$OP" '$3 == "raydex-cpu" && $5 == op {print $15; exit}' "$W/ours.csv")
    ours_th=$(awk -F, -v op="$OP" '$3 == "raydex-cpu" && $5 == op {print $4; exit}' "$W/ours.csv")
    if [ "$st" != 0 ]; then
      what=failed
      [ "$st" = 2 ] && what="timeout"
      echo "$DATE,$DEVICE,postgis-gist,1,$OP,$RNAME,$SNAME,$NR,$NS,$((LOAD_r + LOAD_s)),$QMS,$WMS,,,,1.00,$what,$mode,$L1" >>"$CSV"
      echo "postgis_join.sh: $OP $RNAME:$SNAME: $what after $QMS ms: $(head -1 "$out.err")" >>"$LOG"
      [ -n "$ours_ms" ] && echo "$DATE,$DEVICE,raydex-cpu,$ours_th,$OP,$RNAME,$SNAME,$NR,$NS,,$ours_ms,,$(awk 'END {print NR}' "$ours"),,,>$(awk -v a="$QMS" -v b="$ours_ms" 'BEGIN {printf "%.1f", a / b}'),postgis $what,,$L1" >>"$CSV"
      continue
    fi
    # PostGIS's answers: pairs (areas: with the area); safe mode: undecided ones apart
    if [ "$mode" = safe ]; then
      awk -F'	' '$3 == "undecided" {print $1 "\t" $2}' "$out" >"$out.undecided"
      if [ "$OP" = areas ]; then awk -F'	' '$3 != "undecided"' "$out" >"$out.pairs"
      else awk -F'	' '$3 != "undecided" {print $1 "\t" $2}' "$out" >"$out.pairs"; fi
    else
      cp "$out" "$out.pairs"
      : >"$out.undecided"
    fi
    n_pg=$(awk 'END {print NR}' "$out.pairs")
    n_und=$(awk 'END {print NR}' "$out.undecided")
    # compare: pairs in one answer only, leaving out the pairs PostGIS or GEOS could not decide
    [ -f "$undec" ] || : >"$undec"
    : >"$out.diffs"
    compare "$out.pairs" "$ours" "$out.undecided" "$undec" "$out.diffs" ours >"$out.cmp"
    read -r n_diff n_area maxrel <"$out.cmp"
    check=same
    [ "$n_diff" = 0 ] && [ "$n_area" = 0 ] || check="DIFF=$n_diff"
    [ "$n_area" = 0 ] || check="$check;areas=$n_area"
    [ "$n_und" = 0 ] || check="$check;undecided=$n_und"
    g_und=$(awk 'END {print NR}' "$undec")
    [ "$g_und" = 0 ] || check="$check;geos_undecided=$g_und"
    [ "$OP" = areas ] || maxrel=
    if [ -s "$out.diffs" ]; then sort -n "$out.diffs" >"$out.diffs.sorted"; show_diffs "$out.diffs.sorted"; fi
    # PostGIS against GEOS (same geometries, same GEOS library underneath)
    pg_check=ref
    if [ -f "$W/pairs/$OP.geos.tsv" ]; then
      : >"$out.gdiffs"
      compare "$out.pairs" "$W/pairs/$OP.geos.tsv" "$out.undecided" "$undec" "$out.gdiffs" GEOS >"$out.gcmp"
      read -r g_diff g_area g_rel <"$out.gcmp"
      pg_check="geos:same"
      [ "$g_diff" = 0 ] && [ "$g_area" = 0 ] || pg_check="geos:DIFF=$g_diff"
      [ "$g_area" = 0 ] || pg_check="$pg_check;areas=$g_area"
      [ "$OP" != areas ] || pg_check="$pg_check;max_rel_area=$g_rel"
      if [ -s "$out.gdiffs" ]; then sort -n "$out.gdiffs" >"$out.gdiffs.sorted"; show_diffs "$out.gdiffs.sorted"; fi
    fi
    echo "$DATE,$DEVICE,postgis-gist,1,$OP,$RNAME,$SNAME,$NR,$NS,$((LOAD_r + LOAD_s)),$QMS,$WMS,$n_pg,$n_und,,1.00,$pg_check,$mode,$L1" >>"$CSV"
    if [ -n "$ours_ms" ]; then
      echo "$DATE,$DEVICE,raydex-cpu,$ours_th,$OP,$RNAME,$SNAME,$NR,$NS,,$ours_ms,,$(awk 'END {print NR}' "$ours"),0,$maxrel,$(awk -v a="$QMS" -v b="$ours_ms" 'BEGIN {printf "%.2f", a / b}'),$check,,$L1" >>"$CSV"
    fi
    say "$R ⋈ $S: $OP: PostGIS $QMS ms ($mode), ours ${ours_ms:-?} ms: $check"
  done
done

DIRTY=$(git status --porcelain --untracked-files=no | wc -l)
SRC_DIRTY=$(git status --porcelain --untracked-files=no -- src include | wc -l)
NOTE=$DIR/COMMANDS.md
[ -f "$NOTE" ] || echo "# Commands behind this folder's figures" >"$NOTE"
# the section's earlier text, kept with APPEND=1
awk -v b="<!-- $NOTE_TAG begin -->" -v e="<!-- $NOTE_TAG end -->" '$0 == e {skip = 0} skip {print} $0 == b {skip = 1}' "$NOTE" >"$NOTE.old"
awk -v b="<!-- $NOTE_TAG begin -->" -v e="<!-- $NOTE_TAG end -->" '$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' "$NOTE" >"$NOTE.tmp"
{
  echo "<!-- $NOTE_TAG begin -->"
  if [ "$APPEND" = 1 ] && [ -s "$NOTE.old" ]; then cat "$NOTE.old"; echo; echo "### Added with APPEND=1"; echo; fi
  [ "$APPEND" = 1 ] && [ -s "$NOTE.old" ] || { echo "## join_polygons_postgis.csv: polygon joins, PostGIS (GiST) against our CPU backend (issue 29)"; echo; }
  echo "Written by \`ENGINES=$ENGINES OPS=$OPS REPS=$REPS WARMUP=$WARMUP BIG_REPS=$BIG_REPS BIG_WARMUP=$BIG_WARMUP THREADS=$THREADS TIMEOUT_MIN=$TIMEOUT_MIN APPEND=$APPEND bench/postgis_join.sh $*\` ($START). Machine: $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1),"
  echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $VERSIONS; a throw-away cluster"
  echo "(initdb; server settings \`$SETTINGS\`, the socket in a temporary folder);"
  echo "commit $(git rev-parse --short HEAD) \"$(git log -1 --format=%s)\" with $DIRTY tracked files changed ($SRC_DIRTY under src/ or include/);"
  echo "RAYDEX_THREADS=${RAYDEX_THREADS:-unset}; ENGINES=$ENGINES. PostGIS: one run of each statement after the load; query_ms is"
  printf '%s\n' "psql's \\timing, wall_ms the psql process; load_ms (R and S: COPY of the WKT, ST_GeomFromText,"
  echo "GiST index, ANALYZE) is not in query_ms. Ours: query_ms is geos_join's total_ms (both join"
  echo "indexes built and the join, median of its runs); vs_postgis = PostGIS query_ms / ours."
  echo "load1: the one-minute load average after the statement. The SQL is in bench/postgis_join.sh (query())."
  echo "PostGIS's check compares it with GEOS (\"geos:same\") when GEOS ran; ours is compared with PostGIS."
  [ -z "$GCSV" ] || echo "join_polygons_geos.csv: the geos_join rows of this same run (GEOS STRtree and ours; bench/geos_join.c's columns)."
  echo
  echo '```'
  cat "$CMDS"
  echo '```'
  echo "<!-- $NOTE_TAG end -->"
} >>"$NOTE.tmp"
mv "$NOTE.tmp" "$NOTE"
rm -f "$NOTE.old"
say "wrote $CSV and $NOTE (log: $LOG)"
[ "$FAILED" = 0 ] || exit 1
