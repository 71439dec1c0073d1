// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco 3 job type "faceswap-update" (the file name, with "_" turned into "-"): makes the swapped
// frames of every swapped strip of an edited timeline, in chunks of timeline frames, over the studio's
// shared face cache, then optionally renders the timeline. Drop this file into the Manager's `scripts/`
// folder (beside the flamenco-manager executable) and restart the Manager.
//
// Each chunk is one task running, on a worker:
//   {blender} {blenderArgs} edit.blend --python-exit-code 1 --python-expr "<update this chunk>" -- <cache>
// Blender reads its arguments in order, so --python-exit-code comes first: a failed chunk then exits
// non-zero and Flamenco marks it failed instead of done. The cache folder travels as its own argument
// after "--" (Blender ignores what follows it) rather than inside the Python text: Flamenco rewrites
// path prefixes per platform (two-way variables), and a Windows path inside a Python string would
// break it. The chunk's Python puts it in FACESWAP_CACHE_DIR, which the extension reads. The remote cache
// (remote_cache, s3://bucket/prefix; empty: none) travels the same way, as the argument after the cache folder,
// into FACECACHE_REMOTE_CACHE, which the extension passes on to its engine.

const JOB_TYPE = {
    label: "Face Swap Update",
    description: "Make the swapped frames of every swapped strip, in chunks, over the shared face cache",
    settings: [
        // The sequencer's scene (Blender 5.0 may show another scene than the window's).
        { key: "frames", type: "string", required: true,
          eval: "(lambda s: f'{s.frame_start}-{s.frame_end}')(getattr(C, 'sequencer_scene', None) or C.scene)",
          evalInfo: { showLinkButton: true, description: "Scene frame range" },
          description: "Timeline frames to make swapped frames for. Examples: '1-250', '1-100,200-250'" },
        { key: "chunk_size", type: "int32", default: 128, propargs: { min: 1 }, visible: "submission",
          description: "Timeline frames per task. Each task starts Blender and the face engine (a few " +
                       "seconds): 128 keeps that about a tenth of a 1080p chunk, in whole 64-frame cache segments" },
        { key: "cache_dir", type: "string", subtype: "dir_path", required: true, visible: "submission",
          eval: "str(abspath(bpy.path.abspath((getattr(C, 'sequencer_scene', None) or C.scene).faceswap.cache_dir)))",
          evalInfo: { showLinkButton: true, description: "The project's cache folder, made absolute" },
          description: "Absolute folder of the shared face cache, as the workers see it (use a two-way " +
                       "variable for mixed platforms). Required: in copy and Shaman modes the .blend runs " +
                       "from a job folder, where the project's //faceswap_cache would be a new, empty cache" },
        { key: "remote_cache", type: "string", default: "", visible: "submission",
          description: "The remote cache tier, s3://bucket/prefix (empty: none): workers without the shared " +
                       "folder share their analyses through it. Each worker's Blender needs the extension's " +
                       "remote cache support installed, and AWS credentials in its environment or ~/.aws" },
        { key: "render", type: "bool", default: false, visible: "submission",
          description: "Add a last task that renders the timeline once every chunk is done" },
        { key: "render_output_path", type: "string", subtype: "file_path", visible: "submission",
          description: "Where the render task writes, e.g. '/render/shot/######' (Blender's -o)" },
        { key: "format", type: "string", eval: "C.scene.render.image_settings.file_format", visible: "web",
          description: "Blender's render format (-F) for the render task" },

        // Filled in by the Flamenco add-on on submission:
        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "Path of the .blend file to work on" },
    ],
};

// A range beyond this many frames (5.8 hours at 24 frames a second) is a slip of the keyboard, refused at
// submission: 1-3000000 would be 23,438 tasks of Blender starting and finding nothing to do.
const MAX_FRAMES = 500000;

function compileJob(job) {
    const settings = job.settings;
    const cacheDir = checkedCacheDir(settings.cache_dir);
    const remoteCache = checkedRemoteCache(settings.remote_cache);
    const runs = timelineRuns(settings.frames);
    if (settings.render && runs[0][0] < 0) {
        throw `frames "${settings.frames}" hold negative frames, which the render task cannot render (Blender's ` +
              "--render-frame reads -N as N frames before the end): turn the render task off, or move the " +
              "timeline to start at frame 0";
    }
    const chunkTasks = chunksOf(runs, settings.chunk_size).map((chunk) => {
        const task = author.Task(`faceswap-${runsText(chunk, ",")}`, "blender");
        task.addCommand(blenderCommand(settings.blendfile, updateExpression(chunk), cacheDir, remoteCache));
        job.addTask(task);
        return task;
    });

    if (settings.render) {
        job.addTask(renderTask(settings, runs, cacheDir, remoteCache, chunkTasks));
    }
}

// The timeline frames of a range such as "1-250", "1-100,200-250", "20..25" or "-10--1" (Blender's
// timeline allows negative frames) as sorted [first, last] runs, overlaps merged. Flamenco's own
// frameChunker reads no negative frame, so the job type cuts its chunks itself.
function timelineRuns(text) {
    const parts = String(text || "").split(",").map((part) => part.trim()).filter((part) => part);
    if (parts.length === 0) {
        throw `frames is empty: give timeline frames such as 1-250 or 1-100,200-250`;
    }
    const runs = parts.map((part) => {
        const match = /^(-?\d+)\s*(?:(?:-|\.\.)\s*(-?\d+))?$/.exec(part);
        if (!match) {
            throw `"${part}" in frames "${text}" is not a frame or a range: use e.g. 1-250, 20..25 or -10--1`;
        }
        const first = parseInt(match[1], 10);
        const last = match[2] === undefined ? first : parseInt(match[2], 10);
        if (last < first) {
            throw `frames ${part} run backwards: give the first frame first, e.g. ${last}-${first}`;
        }
        return [first, last];
    });
    runs.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const run of runs) {
        const previous = merged[merged.length - 1];
        if (previous && run[0] <= previous[1] + 1) {
            previous[1] = Math.max(previous[1], run[1]);
        } else {
            merged.push(run);
        }
    }
    const count = merged.reduce((sum, [first, last]) => sum + last - first + 1, 0);
    if (count > MAX_FRAMES) {
        throw `frames "${text}" hold ${count} frames, more than ${MAX_FRAMES} (5.8 hours at 24 fps): check the ` +
              "range (the scene's frame range is the usual one)";
    }
    return merged;
}

// The runs cut into chunks of `size` frames each (the last may hold fewer), each chunk as its runs.
function chunksOf(runs, size) {
    if (!(Number.isInteger(size) && size >= 1)) {
        throw `invalid chunk size ${size}: chunk_size must be a whole number of frames, 1 or more`;
    }
    const chunks = [];
    let chunk = [];
    let room = size;
    for (let [first, last] of runs) {
        while (first <= last) {
            const end = Math.min(last, first + room - 1);
            chunk.push([first, end]);
            room -= end - first + 1;
            first = end + 1;
            if (room === 0) {
                chunks.push(chunk);
                chunk = [];
                room = size;
            }
        }
    }
    if (chunk.length) {
        chunks.push(chunk);
    }
    return chunks;
}

// Runs as text, as Flamenco names chunks: "A-B" for three frames or more, "A,B" for two, "A" for one.
function runsText(runs, separator) {
    return runs.map(([first, last]) => first === last ? `${first}` : first + 1 === last ? `${first},${last}`
        : `${first}${separator === ".." ? ".." : "-"}${last}`).join(",");
}

// A render task after every chunk: `update` over the whole timeline re-places the swapped strips and
// finds every frame up to date (nothing is computed), then Blender renders the frames.
function renderTask(settings, runs, cacheDir, remoteCache, chunkTasks) {
    if (!settings.render_output_path) {
        throw "render_output_path is empty: say where the render task writes (e.g. /render/shot/######)";
    }
    const task = author.Task("render", "blender");
    const extra = ["--render-output", settings.render_output_path];
    if (settings.format) {
        extra.push("--render-format", settings.format);
    }
    extra.push("--render-frame", runsText(runs, ".."));
    task.addCommand(blenderCommand(settings.blendfile, updateExpression([]), cacheDir, remoteCache, extra));
    for (const chunkTask of chunkTasks) {
        task.addDependency(chunkTask);
    }
    return task;
}

function blenderCommand(blendfile, expression, cacheDir, remoteCache, extraArgs = []) {
    return author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: "{blenderArgs}",
        argsBefore: [],
        blendfile: blendfile,
        args: ["--python-exit-code", "1", "--python-expr", expression, ...extraArgs, "--", cacheDir,
               ...(remoteCache ? [remoteCache] : [])],
    });
}

// Python for one task: the cache folder from the argument after "--" (and the remote cache from the one after
// it, when there is one), then faceswap.update on each run of the chunk's frames (a chunk of a range like
// "1-10,20-25" may hold several); no runs: all frames.
function updateExpression(runs) {
    const calls = runs.length === 0
        ? ["bpy.ops.faceswap.update()"]
        : runs.map(([first, last]) => `bpy.ops.faceswap.update(frame_start=${first}, frame_end=${last})`);
    return "import bpy, os, sys; os.environ.update(zip(('FACESWAP_CACHE_DIR', 'FACECACHE_REMOTE_CACHE'), " +
        "sys.argv[sys.argv.index('--') + 1:])); " +
        calls.join("; ");
}

function checkedRemoteCache(value) {
    const url = String(value || "").trim();
    if (url && !/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(url)) {
        throw `remote_cache must be s3://bucket/prefix (got "${url}"), or empty for none`;
    }
    return url;
}

function checkedCacheDir(value) {
    const folder = String(value || "").trim();
    // POSIX (not Blender's "//", relative to the .blend), a Windows drive or UNC share, or a
    // Flamenco variable such as {nas}/faceswap_cache
    if (!/^(\/(?!\/)|[A-Za-z]:[\\/]|\\\\|\{[^}]+\})/.test(folder)) {
        throw `cache_dir must be an absolute folder that every worker sees (got "${folder}"): ` +
              "e.g. /mnt/nas/faceswap_cache, or {nas}/faceswap_cache with a two-way variable";
    }
    return folder;
}
