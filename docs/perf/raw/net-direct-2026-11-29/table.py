# table.py: the A/B lines of ab.sh (collective mode rep size time busbw) as a markdown table of medians.
import sys, statistics as st, collections
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    c,mode,rep,size,time,bw=line.split()
    d[(c,int(size),mode)].append(float(bw))
colls=[]; sizes=sorted({k[1] for k in d})
for k in d:
    if k[0] not in colls: colls.append(k[0])
print("| collective | size | slots GB/s (min-max) | direct GB/s (min-max) | ratio of medians |")
print("|---|---:|---|---|---:|")
for c in colls:
    for s in sizes:
        a=d.get((c,s,'0')); b=d.get((c,s,'65536'))
        if not a or not b: continue
        ma,mb=st.median(a),st.median(b)
        def fm(v): return f"{st.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
        sz = f"{s//1048576} MiB" if s>=1048576 else f"{s//1024} KiB"
        print(f"| {c} | {sz} | {fm(a)} | {fm(b)} | {mb/ma:.2f} |")
