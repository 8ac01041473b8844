# Folds compute-sanitizer's reports (blocks of "=========" lines) into one line per kind and
# place: "========= GROUP <count>: <first line> @ <first frame of ours>", printed at the end.
# Everything else (the program's own output, the tools' SUMMARY lines) passes through. The
# place is the kernel ("at ...") or the first host frame past the CUDA runtime and rdx_copy.
function flush() { if (head != "") { groups[head " @ " (place == "" ? "?" : place)]++; head = ""; place = "" } }
/^========= (COMPUTE-SANITIZER|.*SUMMARY)/ { flush(); print; next }
/^=========$|^========= $/ { flush(); next }
/^=========     *(at |Host Frame: )/ {
  if (place == "") {
    f = $0; sub(/^=========  *(Host Frame: )?/, "", f); sub(/ \[0x[0-9a-f]+\].*/, "", f); sub(/\+0x[0-9a-f]+$/, "", f)
    if (f !~ /^(cudaMemcpy|cudaMemset|rdx_cuda_memcpy|rdx_copy|cudaLaunch|libcuda)/) place = f
  }
  next
}
/^=========  *(by thread|Address |Saved host)/ { next }
/^========= / {
  if (head == "") { h = $0; sub(/^========= */, "", h); gsub(/0x[0-9a-f]+/, "ADDR", h); gsub(/[0-9][0-9,]* bytes/, "N bytes", h); head = h }
  else if (head !~ /\|/) { d = $0; sub(/^=========  */, "", d); gsub(/0x[0-9a-f]+/, "ADDR", d); head = head " | " d }
  next
}
{ flush(); print }
END { flush(); for (g in groups) printf "========= GROUP %d: %s\n", groups[g], g }
