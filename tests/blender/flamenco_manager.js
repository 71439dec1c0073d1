// A stand-in for Flamenco Manager's job compiler (there is no Manager here: it is a Go program from
// Blender's site, on no package registry). It loads a job type script as the Manager does, with the
// globals the Manager gives it, implemented from Flamenco 3's documentation and source:
//   author.Task(name, type) -> task with addCommand(cmd), addDependency(task); name and type required
//   author.Command(name, parameters)
//   frameChunker(frames, n): "1-10,20..25" -> sorted, duplicate-free frames, cut into groups of n,
//       each written back as runs: "A-B" for three or more, "A,B" for two, "A" for one, comma-joined
//   path.join/dirname/basename/stem, process.cwd/platform, print, alert, formatTimestampLocal, shellSplit
// The job type's name is its file name with "_" turned into "-".
//
//   node flamenco_manager.js job-type SCRIPT.js          prints {"name", "label", "settings", ...}
//   node flamenco_manager.js compile SCRIPT.js JOB.json  prints {"tasks": [...]} (exit 1: {"error"})
// JOB.json: {"name", "settings": {...}, "metadata": {...}}; a task prints as
// {"name", "type", "commands": [{"name", "parameters"}], "dependencies": [task names]}.
"use strict";

const fs = require("fs");
const nodePath = require("path");
const vm = require("vm");

function frameRangeExplode(frames) {
    const found = new Set();
    for (const part of String(frames).replaceAll("..", "-").split(",")) {
        const ends = part.split("-");
        const numbers = ends.map((text) => {
            if (!/^\s*\d+\s*$/.test(text)) {
                throw new Error(`invalid range "${frames}": ${part}`);
            }
            return parseInt(text, 10);
        });
        if (numbers.length === 1) {
            found.add(numbers[0]);
        } else if (numbers.length === 2) {
            for (let frame = numbers[0]; frame <= numbers[1]; frame++) {
                found.add(frame);
            }
        } else {
            throw new Error(`invalid range "${frames}": ${part}`);
        }
    }
    return [...found].sort((a, b) => a - b);
}

function frameRangeMerge(frames) {
    const runs = [];
    let start = frames[0];
    let previous = frames[0];
    const close = (first, last) => {
        if (first === last) runs.push(`${first}`);
        else if (first + 1 === last) runs.push(`${first}`, `${last}`);
        else runs.push(`${first}-${last}`);
    };
    for (const frame of frames.slice(1)) {
        if (frame > previous + 1) {
            close(start, previous);
            start = frame;
        }
        previous = frame;
    }
    close(start, previous);
    return runs.join(",");
}

function frameChunker(frames, chunkSize) {
    if (!String(frames).trim()) throw new Error(`invalid range "${frames}": empty range`);
    if (!(chunkSize >= 1)) throw new Error(`invalid chunk size, must be positive number: ${chunkSize}`);
    const all = frameRangeExplode(String(frames).trim());
    if (all.length === 0) throw new Error(`invalid range "${frames}": empty range`);
    const chunks = [];
    for (let i = 0; i < all.length; i += chunkSize) {
        chunks.push(frameRangeMerge(all.slice(i, i + chunkSize)));
    }
    return chunks;
}

const author = {
    Task(name, type) {
        name = String(name || "").trim();
        type = String(type || "").trim();
        if (!name) throw new Error("author.Task(name, type): name is required");
        if (!type) throw new Error("author.Task(name, type): type is required");
        return {
            name, type, priority: 50, commands: [], dependencies: [],
            addCommand(command) { this.commands.push(command); },
            addDependency(task) { this.dependencies.push(task); },
        };
    },
    Command(name, parameters, totalStepCount = 0) {
        return { name, parameters, totalStepCount };
    },
};

const path = {
    join: (...parts) => nodePath.posix.join(...parts),
    dirname: (p) => nodePath.posix.dirname(p),
    basename: (p) => nodePath.posix.basename(p),
    stem: (p) => nodePath.posix.basename(p, nodePath.posix.extname(p)),
};

function shellSplit(text) {  // the Manager uses github.com/google/shlex: quotes and backslashes, no expansion
    const words = [];
    const pattern = /"((?:\\.|[^"\\])*)"|'([^']*)'|((?:\\.|[^\s"'\\])+)|(\s+)/g;
    let word = null;
    for (const match of String(text).matchAll(pattern)) {
        if (match[4] !== undefined) {
            if (word !== null) words.push(word);
            word = null;
            continue;
        }
        const piece = match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1")
            : match[2] !== undefined ? match[2] : match[3].replace(/\\(.)/g, "$1");
        word = (word || "") + piece;
    }
    if (word !== null) words.push(word);
    return words;
}

function loadJobType(script) {
    const logged = [];
    const context = vm.createContext({
        author, path, frameChunker, shellSplit,
        process: { cwd: () => process.cwd(), platform: process.platform },
        print: (...args) => logged.push(args.map(String).join(" ")),
        alert: (...args) => logged.push(args.map(String).join(" ")),
        formatTimestampLocal: (date) => new Date(date).toISOString().slice(0, 19).replace("T", "_").replaceAll(":", ""),
    });
    vm.runInContext(fs.readFileSync(script, "utf8"), context, { filename: script });
    const name = nodePath.basename(script, ".js").replaceAll("_", "-");
    return { name, context, logged };
}

function main(argv) {
    const [mode, script, jobFile] = argv;
    const { name, context, logged } = loadJobType(script);
    const jobType = vm.runInContext("typeof JOB_TYPE === 'undefined' ? undefined : JOB_TYPE", context);
    if (!jobType || vm.runInContext("typeof compileJob", context) !== "function") {
        throw new Error(`script (${script}) must define JOB_TYPE and compileJob(job)`);
    }
    if (mode === "job-type") {
        return { name, ...JSON.parse(JSON.stringify(jobType)) };
    }
    const submitted = JSON.parse(fs.readFileSync(jobFile, "utf8"));
    const tasks = [];
    const job = {
        name: submitted.name, type: name, priority: 50, created: new Date(),
        settings: { ...submitted.settings }, metadata: { ...(submitted.metadata || {}) },
        addTask(task) { tasks.push(task); },
    };
    vm.runInContext("compileJob", context)(job);
    return {
        log: logged, settings: job.settings,
        tasks: tasks.map((task) => ({
            name: task.name, type: task.type,
            commands: task.commands.map((c) => ({ name: c.name, parameters: c.parameters })),
            dependencies: task.dependencies.map((d) => d.name),
        })),
    };
}

try {
    process.stdout.write(JSON.stringify(main(process.argv.slice(2))) + "\n");
} catch (error) {  // a string thrown by the script is what the Manager reports on submission
    process.stdout.write(JSON.stringify({ error: String(error && error.message !== undefined ? error.message : error) }) + "\n");
    process.exitCode = 1;
}
