# A model of the pack reader's base cache for the root and folder trees a blame reads (see
# ../../blametrees-callgrind.md): inputs made by
#   git -C /work/corpus/git.git cat-file --batch-all-objects \
#     --batch-check='%(objectname) %(objecttype) %(objectsize) %(deltabase)' > /tmp/bt-all.txt
#   treeseq.txt: for each of the 25 pages of urls.txt (commit C, path P), for each parent of
#   `git log --format=%P C -- P`, its root tree and the folders on P (git cat-file --batch-check)
# cost: 3 per byte of a whole tree inflated, 1 per byte of a delta's result plus 2000 a delta.
import sys
from collections import OrderedDict
base={}; size={}
for l in open('/tmp/bt-all.txt'):
    o,t,s,b=l.split()
    if t!='tree': continue
    size[o]=int(s); base[o]=None if b=='0'*40 else b
seq=[l.strip() for l in open('/tmp/blametrees/treeseq.txt')]
memo=set()
def run(budget, keep_final=True, keep_every=1, maxsize=None):
    lru=OrderedDict(); used=0; cost=0; infl=0
    maxsize = maxsize or budget//4
    def keep(o):
        nonlocal used
        if size[o]>maxsize or o in lru: return
        while used+size[o]>budget and lru:
            k,v=lru.popitem(last=False); used-=v
        lru[o]=size[o]; used+=size[o]
    for t in seq:
        chain=[]; o=t
        while True:
            if o in lru: lru.move_to_end(o); break
            chain.append(o)
            if base[o] is None: break
            o=base[o]
        for i,x in enumerate(reversed(chain)):
            full = base[x] is None or (i==0 and x not in lru and base[x] is None)
            if base[x] is None: cost+=3*size[x]
            else: cost+=size[x]+2000
            infl+=1
            last = (x==t)
            if (not last or keep_final): keep(x)
    return cost, infl
for b in [32,64,128,256,1024]:
    c,i=run(b<<20)
    print(b,'MB cost/read',c//len(seq),'infl/read',round(i/len(seq),2))
def run_compose(budget, keep_mid=False):
    lru=OrderedDict(); used=0; cost=0
    def keep(o):
        nonlocal used
        if o in lru: return
        while used+size[o]>budget and lru:
            k,v=lru.popitem(last=False); used-=v
        lru[o]=size[o]; used+=size[o]
    for t in seq:
        o=t; depth=0
        while True:
            if o in lru: lru.move_to_end(o); break
            if base[o] is None:
                cost+=3*size[o]; keep(o); break
            depth+=1; o=base[o]
        if depth: cost+=size[t]+2000*depth; keep(t)
    return cost
for b in [8,16,32]:
    print('compose',b,'MB cost/read',run_compose(b<<20)//len(seq))
