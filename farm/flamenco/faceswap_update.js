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
// break it. The chunk's Python puts it in FACESWAP_CACHE_DIR, which the extension reads.

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

function compileJob(job) {
    const settings = job.settings;
    const cacheDir = checkedCacheDir(settings.cache_dir);
    const chunks = frameChunker(settings.frames, settings.chunk_size);

    const chunkTasks = chunks.map((chunk) => {
        const task = author.Task(`faceswap-${chunk}`, "blender");
        task.addCommand(blenderCommand(settings.blendfile, updateExpression(frameRanges(chunk)), cacheDir));
        job.addTask(task);
        return task;
    });

    if (settings.render) {
        job.addTask(renderTask(settings, cacheDir, chunkTasks));
    }
}

// A render task after every chunk: `update` over the whole timeline re-places the swapped strips and
// finds every frame up to date (nothing is computed), then Blender renders the frames.
function renderTask(settings, cacheDir, chunkTasks) {
    if (!settings.render_output_path) {
        throw "render_output_path is empty: say where the render task writes (e.g. /render/shot/######)";
    }
    const task = author.Task("render", "blender");
    const extra = ["--render-output", settings.render_output_path];
    if (settings.format) {
        extra.push("--render-format", settings.format);
    }
    extra.push("--render-frame", String(settings.frames).replaceAll("-", ".."));
    task.addCommand(blenderCommand(settings.blendfile, updateExpression([]), cacheDir, extra));
    for (const chunkTask of chunkTasks) {
        task.addDependency(chunkTask);
    }
    return task;
}

function blenderCommand(blendfile, expression, cacheDir, extraArgs = []) {
    return author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: "{blenderArgs}",
        argsBefore: [],
        blendfile: blendfile,
        args: ["--python-exit-code", "1", "--python-expr", expression, ...extraArgs, "--", cacheDir],
    });
}

// Python for one task: the cache folder from the argument after "--", then faceswap.update on each
// run of the chunk's frames (a chunk of a range like "1-10,20-25" may hold several); no runs: all frames.
function updateExpression(runs) {
    const calls = runs.length === 0
        ? ["bpy.ops.faceswap.update()"]
        : runs.map(([first, last]) => `bpy.ops.faceswap.update(frame_start=${first}, frame_end=${last})`);
    return "import bpy, os, sys; os.environ['FACESWAP_CACHE_DIR'] = sys.argv[sys.argv.index('--') + 1]; " +
        calls.join("; ");
}

// frameChunker's chunk strings ("9-16", "7", "3,4", "1-5,8") as [first, last] runs, neighbours
// merged ("3,4" is one run): each run is one operator call, and each call starts the face engine.
function frameRanges(chunk) {
    const runs = [];
    for (const part of chunk.split(",")) {
        const [first, last] = part.split("-").map((text) => parseInt(text.trim(), 10));
        const run = [first, last === undefined ? first : last];
        const previous = runs[runs.length - 1];
        if (previous && previous[1] + 1 === run[0]) {
            previous[1] = run[1];
        } else {
            runs.push(run);
        }
    }
    return runs;
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
