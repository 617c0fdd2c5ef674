/* Shared ceilings: a QEMU throttle group of 1500 IOPS over three volumes,
 * recorded by iopsd in the guest, is found and named; independent caps, a
 * stripe's members and busy disks are not taken for one; declared or
 * learned per-device ceilings tell equal shares apart; a group whose
 * members do more together is dropped. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ceiling.h"
#include "macro.h"
#include "shared_ceiling.h"

/* Recorded by iopsd in the VM lab's TCG guest (tests/vm/test-lab-cloud.py,
 * instburst): a throttle group of x-iops-total=1500, x-iops-total-max=3000
 * over vdi, nvme0n1 and vdj, fio randread 4k QD16 on each. The guest, the
 * host 92% busy, kept the burst's queue full only now and then: the
 * seconds at 3000 alternate with seconds and runs of ten where it
 * submitted 1000 or less, its queues at 1 or 2, 40% busy (QEMU let 2615
 * I/O/s through on average). This run was stopped before the bucket ran
 * dry; the base is the same group's, held after the burst of the run that
 * followed (1500, each queue at 15). */
static const double lab_instburst_starved[][9] = {
    {840.9, 6.49, 65.7, 867.7, 5.93, 66.5, 918.5, 6.33, 64.5},
    {306.1, 1.05, 41.4, 361.3, 1.61, 47.8, 355.3, 1.43, 37.7},
    {279.4, 1.09, 37.1, 336.8, 1.43, 45.5, 324.4, 1.21, 46.7},
    {586.5, 3.04, 55.4, 577.4, 3.22, 48.9, 634.4, 3.80, 61.5},
    {996.4, 8.43, 79.9, 1034.4, 8.82, 79.0, 954.2, 9.28, 85.6},
    {947.1, 9.41, 78.8, 1083.3, 10.17, 87.8, 918.6, 9.64, 83.5},
    {1044.8, 7.12, 82.4, 1058.1, 6.25, 74.6, 925.5, 7.36, 70.1},
    {796.5, 7.90, 75.9, 941.5, 8.23, 75.5, 1293.1, 9.40, 91.4},
    {1081.5, 10.67, 96.0, 999.9, 12.32, 98.4, 926.3, 11.44, 93.1},
    {1015.4, 9.92, 88.7, 962.4, 9.73, 88.3, 1024.4, 10.61, 91.5},
    {995.5, 13.62, 97.2, 1044.5, 13.20, 98.8, 962.5, 13.67, 98.8},
    {928.4, 12.79, 94.4, 1023.4, 13.04, 97.2, 1051.4, 13.07, 96.0},
    {980.8, 13.97, 98.0, 1033.8, 14.25, 100.0, 984.8, 13.85, 98.0},
    {911.4, 13.02, 93.9, 979.3, 12.62, 95.1, 977.3, 12.99, 94.3},
    {675.1, 2.64, 51.2, 711.1, 2.45, 41.2, 683.1, 2.37, 63.2},
    {998.7, 13.86, 97.7, 1026.7, 13.92, 96.9, 977.7, 13.45, 96.1},
    {996.0, 14.84, 99.9, 1033.0, 14.27, 99.1, 968.1, 14.33, 99.1},
    {1042.9, 13.38, 96.5, 952.8, 13.13, 94.5, 1008.9, 13.41, 98.5},
    {1012.8, 14.10, 98.0, 980.8, 14.19, 98.8, 1006.8, 14.19, 98.4},
    {955.0, 13.89, 98.0, 1080.0, 13.74, 99.2, 966.0, 14.21, 99.2},
    {996.3, 9.49, 80.0, 1019.3, 9.66, 86.0, 985.3, 9.43, 78.4},
    {561.4, 4.52, 54.7, 623.4, 4.53, 53.1, 644.3, 5.01, 68.7},
    {720.7, 3.97, 47.9, 826.5, 4.16, 74.7, 641.9, 3.15, 40.3},
    {1003.8, 12.76, 97.3, 1070.9, 13.01, 97.3, 1008.8, 12.75, 94.9},
    {1022.2, 13.50, 98.9, 1086.3, 13.35, 99.7, 897.1, 13.66, 97.7},
    {922.2, 11.89, 92.0, 1028.9, 11.21, 88.5, 991.1, 11.56, 88.5},
    {494.3, 4.89, 54.7, 502.5, 4.12, 63.7, 453.5, 4.34, 47.4},
    {529.7, 2.83, 42.3, 615.3, 2.96, 54.8, 551.8, 2.58, 47.1},
    {137.0, 0.69, 28.4, 213.0, 0.57, 44.0, 142.0, 0.83, 42.4},
    {1030.2, 9.59, 86.6, 1041.2, 10.46, 86.6, 995.1, 9.90, 83.8},
    {997.1, 11.20, 90.0, 1060.1, 11.37, 92.8, 958.1, 11.91, 92.8},
    {936.9, 9.76, 89.7, 1046.0, 10.44, 86.9, 982.5, 10.94, 91.7},
    {1059.3, 12.91, 95.5, 937.5, 12.08, 95.1, 1030.1, 12.90, 96.3},
    {957.1, 11.84, 91.7, 1100.2, 11.48, 94.1, 956.1, 12.23, 92.5},
    {1031.5, 14.32, 99.2, 995.5, 13.82, 98.0, 975.5, 13.95, 97.6},
    {920.5, 13.82, 95.7, 1025.9, 13.19, 95.7, 1030.8, 13.91, 99.2},
    {980.3, 13.46, 97.9, 977.2, 13.53, 96.7, 1091.9, 13.90, 99.6},
    {1044.6, 12.72, 98.9, 1032.6, 13.65, 96.9, 1000.6, 13.03, 96.9},
    {1024.8, 14.48, 100.0, 987.8, 14.08, 98.0, 993.8, 13.89, 98.4},
    {974.2, 12.53, 94.4, 1005.2, 12.25, 93.2, 1023.2, 13.03, 96.8},
    {985.8, 13.76, 97.8, 1012.7, 14.17, 98.2, 999.7, 13.85, 98.2},
    {1006.0, 12.14, 96.2, 1031.8, 12.59, 95.8, 962.2, 12.91, 97.8},
    {993.1, 13.23, 98.0, 1052.6, 14.19, 99.6, 954.8, 13.42, 97.2},
    {1003.6, 13.09, 97.6, 965.6, 12.09, 92.4, 1032.6, 13.35, 97.6},
    {980.7, 13.42, 94.7, 989.6, 13.07, 94.3, 1029.6, 12.84, 94.7},
    {1038.0, 13.82, 98.8, 1017.0, 13.50, 96.0, 944.0, 13.23, 96.8},
    {1020.6, 13.35, 99.4, 975.5, 13.72, 97.4, 1005.6, 13.48, 97.0},
    {940.2, 12.88, 94.4, 998.2, 13.15, 98.8, 1063.2, 13.28, 98.4},
    {1047.8, 13.49, 98.0, 1002.8, 13.05, 95.2, 950.8, 13.25, 96.0},
    {1046.2, 14.15, 98.8, 1007.2, 13.99, 98.8, 946.2, 14.04, 98.0},
    {948.2, 13.94, 97.7, 1000.1, 13.62, 96.5, 1051.9, 13.38, 98.9},
    {569.4, 5.32, 60.1, 510.2, 4.88, 54.5, 506.2, 5.58, 70.2},
    {320.0, 1.39, 42.5, 348.9, 1.27, 46.9, 548.6, 2.03, 46.1},
    {506.4, 1.70, 45.2, 442.3, 1.54, 56.0, 430.3, 1.64, 43.2},
    {575.6, 2.82, 57.7, 543.6, 1.71, 45.3, 595.7, 2.48, 49.7},
    {570.5, 2.86, 51.8, 424.8, 2.09, 45.4, 490.1, 1.84, 42.6},
    {645.7, 2.70, 49.5, 554.9, 2.48, 58.7, 618.7, 2.39, 41.1},
    {545.2, 1.57, 41.6, 625.3, 2.12, 54.4, 681.3, 2.72, 51.6},
    {671.5, 2.30, 46.8, 534.4, 1.42, 40.8, 787.6, 2.54, 53.2},
    {513.2, 1.78, 41.0, 514.2, 1.97, 54.9, 531.1, 2.19, 46.9},
    {817.2, 5.38, 70.4, 915.8, 4.63, 66.8, 774.9, 5.41, 62.4},
    {960.7, 5.83, 63.0, 1042.5, 5.04, 82.1, 753.5, 4.85, 54.6},
    {657.3, 3.36, 49.5, 658.3, 1.87, 41.9, 724.1, 3.46, 56.3},
    {611.5, 2.65, 53.5, 590.3, 1.83, 45.9, 705.0, 2.15, 53.1},
    {695.3, 2.56, 45.8, 682.3, 2.60, 48.2, 683.3, 2.37, 45.0},
    {1039.7, 8.58, 84.5, 1008.6, 7.18, 74.9, 1037.7, 9.02, 84.5},
    {970.9, 10.03, 85.9, 1020.1, 9.51, 86.3, 870.6, 9.60, 85.1},
    {985.2, 11.43, 89.6, 978.2, 10.73, 88.0, 1186.2, 11.40, 93.2},
    {985.1, 14.03, 97.6, 1041.1, 14.36, 99.6, 975.1, 14.40, 98.8},
    {862.6, 10.40, 85.2, 929.5, 10.19, 86.8, 861.6, 10.12, 80.8},
    {897.7, 10.06, 84.7, 1137.4, 10.76, 89.9, 992.6, 10.39, 84.3},
    {417.7, 4.31, 56.5, 433.8, 3.48, 57.7, 525.9, 3.61, 61.3},
    {371.4, 1.51, 40.1, 362.5, 1.30, 47.3, 274.1, 1.02, 40.5},
    {291.8, 1.48, 48.7, 270.6, 0.99, 46.3, 383.3, 1.35, 36.6},
    {265.0, 1.08, 31.2, 281.8, 1.06, 48.6, 272.9, 0.73, 45.5},
    {382.7, 1.84, 35.9, 409.9, 1.33, 45.2, 403.9, 2.00, 50.9},
    {481.0, 2.11, 58.9, 158.3, 0.65, 24.9, 353.7, 1.57, 38.9},
    {402.2, 2.11, 48.0, 388.2, 1.68, 38.4, 450.2, 1.98, 48.8},
    {340.7, 0.99, 45.2, 292.7, 0.91, 45.6, 320.7, 0.92, 42.8},
    {395.6, 2.35, 53.7, 323.6, 1.72, 36.3, 413.4, 1.99, 48.5},
    {313.2, 1.12, 40.9, 323.3, 0.89, 39.7, 340.5, 1.13, 38.9},
    {426.8, 2.25, 61.0, 483.6, 2.24, 42.7, 408.8, 1.86, 42.7},
    {842.7, 7.31, 77.6, 1102.7, 8.71, 78.8, 1069.7, 8.85, 80.8},
    {1038.8, 12.10, 91.9, 1055.9, 11.47, 91.0, 1010.8, 11.27, 92.3},
    {498.2, 2.88, 62.1, 402.4, 2.11, 40.2, 579.2, 2.47, 50.0},
    {378.2, 2.19, 41.7, 242.2, 1.09, 34.3, 482.4, 2.54, 51.5},
    {942.0, 9.41, 81.5, 970.1, 10.13, 80.3, 1019.2, 10.22, 86.3},
    {865.2, 6.66, 69.5, 1125.6, 8.40, 84.2, 848.2, 6.45, 72.6},
    {806.5, 6.20, 63.3, 868.6, 6.89, 65.7, 1081.0, 6.99, 68.5},
    {738.0, 5.49, 61.5, 1142.5, 6.73, 70.3, 999.7, 6.33, 67.9},
    {1000.1, 13.08, 95.3, 1015.2, 12.46, 90.1, 987.1, 12.78, 93.3},
    {1003.2, 13.71, 98.4, 991.3, 13.69, 98.8, 989.3, 13.43, 98.4},
    {1002.0, 12.29, 95.3, 1025.2, 11.14, 90.4, 993.9, 11.57, 94.4},
    {945.1, 13.19, 97.2, 1035.1, 13.05, 98.4, 1020.1, 13.95, 98.4},
    {971.2, 14.21, 98.8, 1001.1, 14.09, 99.6, 1017.0, 13.81, 98.4},
    {1016.3, 14.05, 98.8, 988.2, 14.20, 100.0, 1008.3, 14.27, 98.8},
    {986.8, 14.69, 99.6, 1014.8, 14.75, 99.6, 998.8, 14.70, 99.2},
    {923.9, 10.22, 81.5, 955.9, 9.92, 80.3, 989.8, 10.08, 84.7},
    {1052.2, 14.19, 99.7, 969.1, 13.91, 98.5, 992.2, 13.64, 98.5},
    {989.7, 14.93, 99.8, 977.7, 14.74, 99.8, 1029.6, 14.64, 99.8},
    {1021.5, 9.28, 82.4, 969.2, 7.76, 78.5, 894.3, 8.79, 76.1},
};
static const double lab_instburst_base[][9] = {
    {507.1, 15.46, 100.0, 494.1, 15.49, 100.0, 498.1, 15.41, 100.0},
    {499.2, 15.52, 100.0, 504.2, 15.34, 100.0, 496.2, 15.54, 100.0},
    {485.7, 15.61, 99.9, 494.7, 15.45, 99.9, 520.7, 15.59, 99.9},
    {493.3, 15.53, 100.0, 503.3, 15.50, 100.0, 502.3, 15.48, 100.0},
    {515.0, 14.08, 99.6, 523.0, 14.52, 100.0, 462.0, 13.74, 96.4},
    {434.8, 4.87, 52.0, 449.8, 4.35, 66.8, 610.7, 4.48, 61.2},
    {503.2, 15.21, 100.0, 509.2, 14.98, 100.0, 493.2, 15.12, 98.8},
    {504.9, 15.69, 100.0, 497.9, 15.65, 100.0, 497.9, 15.65, 100.0},
    {489.0, 15.39, 100.0, 510.0, 15.42, 100.0, 501.0, 15.39, 100.0},
    {509.2, 15.35, 100.0, 495.2, 15.43, 100.0, 496.2, 15.53, 100.0},
    {501.0, 15.69, 100.0, 500.0, 15.62, 100.0, 497.0, 15.65, 100.0},
    {488.9, 15.56, 100.0, 512.9, 15.47, 100.0, 499.9, 15.55, 100.0},
    {515.5, 15.63, 99.9, 490.5, 15.57, 99.9, 494.5, 15.31, 99.9},
    {514.7, 14.86, 99.8, 488.1, 14.53, 99.8, 491.1, 15.04, 99.8},
    {495.8, 9.81, 76.2, 504.9, 9.43, 86.8, 504.9, 9.67, 75.4},
    {518.8, 15.51, 100.0, 489.7, 15.50, 100.0, 491.7, 15.55, 100.0},
    {506.8, 15.42, 99.6, 502.8, 15.32, 99.6, 484.9, 15.50, 99.6},
    {505.2, 15.67, 100.0, 495.1, 15.62, 100.0, 504.2, 15.61, 100.0},
    {497.0, 15.29, 100.0, 496.0, 15.43, 100.0, 507.0, 15.44, 100.0},
    {488.8, 14.61, 99.2, 493.8, 15.17, 100.0, 519.8, 15.12, 99.2},
    {499.7, 15.42, 99.9, 508.7, 15.43, 99.9, 492.7, 15.41, 99.9},
    {490.5, 15.50, 100.0, 502.5, 15.38, 100.0, 506.5, 15.30, 99.7},
    {502.1, 15.37, 100.0, 505.1, 15.31, 100.0, 493.1, 15.40, 100.0},
    {497.9, 15.38, 100.0, 500.9, 15.45, 100.0, 501.9, 15.40, 100.0},
    {512.0, 15.69, 100.0, 481.0, 15.70, 100.0, 507.0, 15.71, 100.0},
    {505.1, 15.18, 99.6, 497.2, 15.35, 100.0, 493.2, 15.45, 99.6},
    {490.4, 14.62, 98.1, 507.5, 14.42, 98.5, 520.7, 14.24, 98.1},
    {549.1, 14.69, 99.8, 479.3, 14.87, 99.8, 514.2, 14.77, 99.8},
    {491.1, 12.22, 90.4, 493.1, 11.27, 82.0, 519.3, 12.02, 94.0},
    {469.2, 14.93, 100.0, 511.2, 14.91, 100.0, 519.2, 14.87, 100.0},
    {508.6, 15.11, 99.9, 484.7, 15.12, 99.9, 506.6, 15.17, 99.9},
};

/* Recorded by iopsd in a QEMU guest (TCG): vdc, vdd, vde in
 * throttling.group=g1 with iops-total=1500, fio randread 4k QD16; per second
 * IOPS, aqu-sz, %util of each. */
/* fio QD16 on all three at once for 45 s */
static const double qemu_group_1500[][9] = {
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {299.2, 5.97, 43.8, 236.0, 5.83, 41.0, 256.0, 5.77, 41.4},
    {509.0, 15.04, 100.0, 484.0, 15.23, 100.0, 513.9, 15.23, 100.0},
    {470.3, 13.89, 97.7, 486.3, 14.12, 96.1, 543.6, 13.79, 96.5},
    {499.8, 14.63, 99.6, 506.8, 15.08, 100.0, 493.8, 14.83, 99.2},
    {519.3, 15.05, 99.3, 518.3, 14.96, 99.3, 455.5, 15.10, 99.3},
    {521.6, 14.67, 100.0, 480.5, 14.46, 100.0, 504.6, 14.75, 100.0},
    {512.3, 13.92, 98.1, 472.3, 14.85, 99.7, 516.3, 14.82, 99.7},
    {505.8, 14.01, 99.2, 485.8, 14.14, 100.0, 506.8, 13.40, 88.8},
    {491.1, 14.97, 99.6, 510.1, 14.87, 98.8, 500.1, 14.86, 99.6},
    {471.7, 15.17, 99.9, 492.7, 15.15, 99.9, 534.7, 14.95, 99.9},
    {489.6, 15.18, 100.0, 516.6, 14.95, 100.0, 493.6, 14.89, 100.0},
    {497.5, 15.13, 100.0, 532.5, 15.20, 100.0, 470.4, 15.13, 100.0},
    {493.4, 14.78, 98.5, 519.5, 14.98, 98.5, 487.4, 14.68, 98.5},
    {519.7, 15.58, 99.5, 494.7, 15.34, 99.5, 484.7, 15.56, 99.5},
    {499.0, 15.50, 100.0, 498.0, 15.41, 100.0, 500.0, 15.49, 100.0},
    {500.8, 15.51, 98.6, 509.9, 15.50, 97.8, 488.8, 15.44, 98.2},
    {503.0, 15.74, 100.0, 501.0, 15.52, 99.2, 501.0, 15.60, 100.0},
    {486.2, 15.82, 100.0, 510.2, 15.82, 100.0, 503.2, 15.78, 100.0},
    {506.1, 15.79, 100.0, 492.1, 15.81, 100.0, 502.1, 15.83, 100.0},
    {507.1, 15.81, 100.0, 510.1, 15.79, 100.0, 483.1, 15.82, 100.0},
    {498.7, 15.79, 99.9, 495.7, 15.76, 99.9, 505.6, 15.72, 99.9},
    {499.2, 15.84, 100.0, 499.2, 15.74, 100.0, 501.2, 15.80, 100.0},
    {492.1, 15.71, 100.0, 506.1, 15.85, 100.0, 501.1, 15.82, 100.0},
    {496.4, 15.86, 99.9, 490.4, 15.83, 99.9, 513.4, 15.74, 99.9},
    {507.2, 15.76, 100.0, 498.2, 15.73, 100.0, 494.2, 15.83, 100.0},
    {500.0, 15.75, 100.0, 499.0, 15.78, 100.0, 501.0, 15.74, 100.0},
    {487.2, 15.65, 100.0, 505.2, 14.84, 99.2, 508.2, 15.62, 100.0},
    {509.8, 15.50, 100.0, 492.8, 15.52, 100.0, 496.8, 15.42, 100.0},
    {497.1, 15.79, 100.0, 501.1, 15.74, 100.0, 503.1, 15.77, 100.0},
    {493.3, 15.83, 99.7, 506.3, 15.84, 99.7, 499.3, 15.81, 99.7},
    {508.9, 15.76, 100.0, 497.9, 15.78, 100.0, 492.9, 15.82, 100.0},
    {479.6, 15.41, 100.0, 546.5, 15.38, 100.0, 473.6, 15.54, 100.0},
    {511.8, 15.00, 100.0, 515.8, 15.64, 100.0, 469.9, 15.25, 100.0},
    {508.5, 15.46, 99.5, 481.6, 15.26, 99.5, 509.5, 15.52, 99.5},
    {521.2, 15.44, 100.0, 509.2, 15.44, 100.0, 471.1, 15.50, 100.0},
    {493.8, 15.56, 100.0, 483.8, 15.47, 100.0, 524.8, 15.45, 100.0},
    {496.1, 15.28, 99.6, 491.1, 15.51, 99.6, 512.1, 15.53, 99.6},
    {500.2, 15.75, 100.0, 503.2, 15.83, 100.0, 497.2, 15.71, 100.0},
    {504.5, 15.78, 100.0, 497.5, 15.65, 100.0, 497.5, 15.72, 100.0},
    {534.6, 15.08, 99.8, 479.4, 15.06, 99.4, 478.4, 15.14, 99.8},
    {463.6, 14.56, 100.0, 496.0, 14.16, 99.2, 535.5, 14.63, 98.8},
    {493.0, 14.67, 98.8, 474.1, 14.11, 98.8, 543.8, 14.40, 98.4},
    {550.5, 15.24, 99.8, 503.2, 15.06, 99.4, 447.8, 14.32, 99.4},
    {478.8, 15.25, 99.7, 488.8, 14.21, 99.7, 526.5, 14.43, 99.3},
    {522.4, 15.23, 100.0, 520.4, 15.34, 100.0, 463.1, 15.38, 100.0},
    {294.8, 9.07, 58.8, 294.8, 9.09, 59.2, 300.8, 9.22, 59.2},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
};

/* fio QD16 on vdc, vdd 12 s later, vde 12 s after that */
static const double qemu_group_1500_staggered[][9] = {
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {525.9, 4.61, 34.1, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1499.9, 14.76, 99.1, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1499.9, 15.22, 99.6, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1500.1, 14.94, 98.4, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1498.3, 15.34, 99.9, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1138.4, 11.21, 83.9, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1466.7, 10.73, 88.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1507.1, 15.15, 100.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1489.4, 14.21, 99.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1512.8, 14.39, 98.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1498.1, 13.17, 95.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1502.1, 14.98, 100.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {916.4, 15.06, 99.7, 580.3, 12.18, 81.8, 0.0, 0.00, 0.0},
    {736.1, 15.21, 100.0, 766.2, 15.40, 100.0, 0.0, 0.00, 0.0},
    {798.1, 14.82, 99.9, 703.2, 14.86, 99.9, 0.0, 0.00, 0.0},
    {723.7, 14.23, 99.8, 773.9, 14.33, 97.4, 0.0, 0.00, 0.0},
    {720.0, 14.82, 98.0, 772.9, 14.49, 99.5, 0.0, 0.00, 0.0},
    {753.7, 13.51, 95.2, 755.7, 12.37, 97.2, 0.0, 0.00, 0.0},
    {721.6, 14.42, 99.6, 777.8, 14.01, 98.8, 0.0, 0.00, 0.0},
    {666.2, 13.63, 94.0, 834.3, 13.85, 99.6, 0.0, 0.00, 0.0},
    {747.4, 14.95, 99.9, 752.4, 15.10, 97.9, 0.0, 0.00, 0.0},
    {780.9, 14.52, 99.5, 708.8, 14.56, 99.5, 0.0, 0.00, 0.0},
    {759.3, 14.31, 100.0, 748.2, 13.95, 98.8, 0.0, 0.00, 0.0},
    {772.7, 12.92, 95.5, 730.6, 13.17, 96.7, 0.0, 0.00, 0.0},
    {614.1, 15.47, 99.4, 622.2, 15.70, 99.8, 264.5, 8.29, 54.9},
    {499.3, 15.86, 100.0, 498.3, 15.75, 100.0, 501.3, 15.78, 100.0},
    {497.8, 15.48, 99.8, 497.8, 15.23, 99.8, 499.8, 15.52, 99.8},
    {514.7, 15.03, 99.9, 498.7, 15.28, 99.1, 492.7, 15.26, 100.0},
    {503.5, 15.08, 100.0, 484.6, 15.16, 100.0, 510.5, 15.14, 99.9},
    {522.9, 15.21, 99.8, 506.8, 15.25, 99.8, 470.6, 15.06, 99.8},
    {514.7, 15.02, 99.9, 495.7, 15.13, 99.9, 489.7, 15.11, 99.9},
    {513.7, 15.37, 99.9, 487.7, 15.04, 99.9, 497.7, 15.24, 99.9},
    {495.5, 15.23, 100.0, 492.5, 15.27, 100.0, 512.5, 15.04, 100.0},
    {488.0, 15.27, 100.0, 513.0, 15.43, 100.0, 499.0, 15.13, 100.0},
    {501.7, 14.95, 100.0, 500.8, 14.93, 100.0, 490.8, 15.18, 100.0},
    {555.1, 15.15, 99.6, 469.0, 15.04, 100.0, 483.0, 15.12, 100.0},
    {512.3, 15.22, 100.0, 473.7, 15.06, 100.0, 513.3, 14.93, 100.0},
    {512.4, 14.93, 99.2, 490.2, 15.04, 99.2, 497.2, 15.05, 99.2},
    {453.3, 15.12, 100.0, 550.1, 14.90, 100.0, 497.2, 14.79, 100.0},
    {508.1, 15.23, 99.8, 482.1, 15.19, 99.8, 508.1, 14.62, 99.0},
    {482.2, 14.89, 99.4, 516.1, 14.79, 93.0, 501.2, 14.75, 98.6},
    {498.1, 15.01, 100.0, 504.1, 14.95, 100.0, 500.1, 14.90, 100.0},
    {525.3, 14.98, 99.9, 464.6, 14.49, 99.9, 492.4, 15.01, 99.9},
    {494.8, 14.45, 99.6, 525.9, 14.62, 97.6, 495.8, 14.33, 98.4},
    {490.2, 15.13, 100.0, 501.2, 14.87, 98.8, 510.2, 14.62, 99.6},
    {499.1, 14.67, 98.6, 532.0, 15.07, 99.4, 469.1, 14.70, 97.4},
    {520.8, 15.24, 100.0, 489.7, 15.23, 100.0, 488.7, 15.20, 100.0},
    {505.1, 14.99, 99.8, 485.1, 15.13, 99.8, 507.1, 14.85, 99.4},
    {501.6, 15.67, 99.9, 501.6, 15.53, 99.9, 500.6, 15.37, 99.9},
    {488.0, 15.49, 100.0, 518.0, 15.40, 100.0, 494.0, 15.28, 100.0},
    {503.0, 15.27, 99.8, 509.9, 15.24, 99.8, 483.3, 15.30, 99.8},
    {485.0, 15.13, 100.0, 512.5, 14.94, 100.0, 505.4, 15.17, 100.0},
    {492.7, 15.45, 99.7, 495.7, 15.12, 99.7, 511.7, 14.95, 99.7},
    {480.9, 15.20, 100.0, 490.9, 15.44, 100.0, 527.1, 15.33, 100.0},
    {480.0, 15.64, 100.0, 512.0, 15.53, 100.0, 510.0, 15.42, 100.0},
    {500.8, 15.50, 100.0, 483.8, 15.55, 100.0, 515.7, 15.38, 100.0},
    {494.9, 15.68, 100.0, 498.9, 15.60, 100.0, 505.9, 15.56, 100.0},
    {514.4, 15.80, 99.7, 480.4, 15.85, 99.7, 505.4, 15.80, 99.7},
    {511.8, 15.50, 100.0, 486.8, 15.62, 100.0, 500.8, 15.72, 100.0},
    {503.7, 15.84, 100.0, 499.7, 15.82, 100.0, 496.7, 15.74, 100.0},
    {540.2, 9.89, 62.8, 101.0, 3.14, 19.6, 306.1, 7.46, 46.8},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
};

struct group_run {
	struct ceiling_set *set;
	struct shared_ceiling *sc;
	const char *names[SHARED_CEILING_MAX_MEMBERS];
	double known[SHARED_CEILING_MAX_MEMBERS];
	size_t n;
	unsigned t;
	int first_found; /* sample at which a group was first throttled, -1 never */
};

static struct device_rates rates(double iops, double queue, double util)
{
	return (struct device_rates){
	    .valid = true,
	    .interval_sec = 1.0,
	    .read_iops = iops,
	    .read_bytes_per_sec = iops * 4096,
	    .queue_depth = queue,
	    .utilization = util,
	};
}

static void group_init(struct group_run *g, const char *const *names, size_t n)
{
	memset(g, 0, sizeof(*g));
	assert_int_equal(ceiling_set_new(NULL, &g->set), 0);
	assert_int_equal(shared_ceiling_new(NULL, NULL, &g->sc), 0);
	for (size_t i = 0; i < n; i++) {
		g->names[i] = names[i];
	}
	g->n = n;
	g->first_found = -1;
}

static void group_done(struct group_run *g)
{
	ceiling_set_free(g->set);
	shared_ceiling_free(g->sc);
}

/* One second: x[3 * i .. 3 * i + 2] are device i's IOPS, aqu-sz, %util. */
static void group_feed(struct group_run *g, const double *x)
{
	struct shared_ceiling_device devs[SHARED_CEILING_MAX_MEMBERS];
	const struct shared_ceiling_group *groups;
	struct device_ceiling out;

	for (size_t i = 0; i < g->n; i++) {
		struct device_rates r = rates(x[3 * i], x[3 * i + 1], x[3 * i + 2] / 100);

		assert_int_equal(ceiling_set_update(g->set, g->names[i], NULL, &r, NULL, false, &out), 0);
	}
	ceiling_set_end_sample(g->set);
	for (size_t i = 0; i < g->n; i++) {
		devs[i] = (struct shared_ceiling_device){g->names[i], ceiling_set_find(g->set, g->names[i]),
							 g->known[i]};
	}
	shared_ceiling_update(g->sc, devs, g->n);
	if (g->first_found < 0 && shared_ceiling_groups(g->sc, &groups) > 0 && groups[0].is_throttled) {
		g->first_found = (int)g->t;
	}
	g->t++;
}

/* A device sampled for a while before the load. */
static void group_idle(struct group_run *g, unsigned seconds)
{
	double zero[3 * SHARED_CEILING_MAX_MEMBERS] = {0};

	for (unsigned i = 0; i < seconds; i++) {
		group_feed(g, zero);
	}
}

static const struct shared_ceiling_group *only_group(const struct group_run *g)
{
	const struct shared_ceiling_group *groups;

	assert_int_equal(shared_ceiling_groups(g->sc, &groups), 1);
	return &groups[0];
}

static void assert_near(double v, double want, double rel)
{
	if (fabs(v - want) > rel * want) {
		fail_msg("%g is not within %g%% of %g", v, rel * 100, want);
	}
}

static const char *const vdcde[] = {"vdc", "vdd", "vde"};

static void test_throttle_group_loaded_at_once_is_found_and_named(void **state)
{
	struct group_run g;
	const struct shared_ceiling_group *sg;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500); i++) {
		group_feed(&g, qemu_group_1500[i]);
		if (i == ELEMENTSOF(qemu_group_1500) - 6) {
			sg = only_group(&g);
			assert_true(sg->is_throttled);
			assert_near(sg->iops, 1500, 0.02);
		}
	}
	/* one window of load after fio started (2 samples in) */
	assert_true(g.first_found >= 20 + 2 + 15 && g.first_found <= 20 + 2 + 22);
	sg = only_group(&g);
	assert_string_equal(sg->devices, "vdc,vdd,vde");
	assert_near(sg->iops_estimate, 1500, 0.05);
	/* kept when the load is gone, no longer throttled */
	assert_false(sg->is_throttled);
	group_done(&g);
}

static void test_throttle_group_loaded_in_turn_is_found(void **state)
{
	struct group_run g;
	const struct shared_ceiling_group *sg;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500_staggered) - 5; i++) {
		group_feed(&g, qemu_group_1500_staggered[i]);
	}
	assert_true(g.first_found > 0);
	sg = only_group(&g);
	assert_string_equal(sg->devices, "vdc,vdd,vde");
	assert_near(sg->iops_estimate, 1500, 0.05);
	assert_true(sg->is_throttled);
	group_done(&g);
}

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

/* The first three devices of a second at `iops` each plus `jitter` times
 * noise, queueing. */
static void three_queueing(double *x, double iops, double jitter, uint64_t *rng)
{
	for (size_t i = 0; i < 3; i++) {
		x[3 * i] = iops + jitter * noise(rng);
		x[3 * i + 1] = 15.8;
		x[3 * i + 2] = 100;
	}
}

/* Three volumes each at its own cap of 500 (a second now and then an I/O
 * short or over, independently): their sum is flat too, but no flatter
 * than its parts. */
static void test_independent_caps_are_no_shared_ceiling(void **state)
{
	struct group_run g;
	uint64_t rng = 7;
	const struct shared_ceiling_group *groups;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		double x[9];

		three_queueing(x, 500, 2, &rng);
		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

/* An instance's burst (a QEMU throttle group with x-iops-total=1500,
 * x-iops-total-max=3000): three volumes of no cap of their own at 1000
 * each, then 500 each under the same demand. Each wanders on its own, so
 * the sum is no flatter than its parts: the bucket learned from the sum
 * names the base the shared ceiling, and a burst of it later is not one. */
static void test_instance_burst_is_learned_and_its_base_is_the_shared_ceiling(void **state)
{
	struct group_run g;
	uint64_t rng = 11;
	const struct shared_ceiling_group *groups;
	bool flagged_in_burst = false;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 70; t++) {
		double x[9];

		three_queueing(x, t < 40 ? 1000 : 500, 2, &rng);
		group_feed(&g, x);
		flagged_in_burst |=
		    t < 40 && shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled;
	}
	assert_false(flagged_in_burst);
	assert_true(only_group(&g)->is_throttled);
	assert_near(only_group(&g)->iops_estimate, 1500, 0.02);
	assert_true(only_group(&g)->has_burst);
	assert_near(only_group(&g)->burst_iops_estimate, 3000, 0.03);
	assert_near(only_group(&g)->burst_base_iops_estimate, 1500, 0.02);
	assert_near(only_group(&g)->burst_credits_estimate, 1500 * 40, 0.1);
	/* idle long enough to refill, then the same burst again */
	group_idle(&g, 45);
	for (unsigned t = 0; t < 20; t++) {
		double x[9];

		three_queueing(x, 1000, 2, &rng);
		group_feed(&g, x);
		flagged_in_burst |= shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled;
	}
	assert_false(flagged_in_burst);
	group_done(&g);
}

/* The lab's instance burst as its starved guest delivered it: the burst
 * runs with seconds and runs of seconds that the guest, not the group,
 * held low, then settles at the base. The bucket is learned at the burst
 * rate of the seconds the queues were full, its base at 1500, and the base
 * is the shared ceiling within the detector's window; no starved level is
 * ever flagged. */
static void test_instance_burst_of_a_starved_guest_is_learned(void **state)
{
	static const char *const names[] = {"nvme0n1", "vdi", "vdj"};
	struct group_run g;
	const struct shared_ceiling_group *groups;
	size_t n_burst = ELEMENTSOF(lab_instburst_starved);
	int flagged_at = -1;

	group_init(&g, names, 3);
	group_idle(&g, 20);
	for (size_t t = 0; t < n_burst; t++) {
		group_feed(&g, lab_instburst_starved[t]);
		/* the first burst, longer than a window, is a plateau like any
		 * (iopsd(8), BURST BUCKETS): at the burst rate, never at what
		 * the starved guest submitted */
		if (shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled) {
			assert_near(groups[0].iops_estimate, 3000, 0.01);
		}
	}
	for (size_t t = 0; t < ELEMENTSOF(lab_instburst_base); t++) {
		group_feed(&g, lab_instburst_base[t]);
		if (flagged_at < 0 && shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled) {
			flagged_at = (int)t;
		}
	}
	assert_true(flagged_at >= 0 && flagged_at <= 25);
	assert_true(only_group(&g)->has_burst);
	assert_near(only_group(&g)->burst_iops_estimate, 3000, 0.03);
	assert_near(only_group(&g)->burst_base_iops_estimate, 1500, 0.02);
	assert_near(only_group(&g)->iops_estimate, 1500, 0.02);
	group_done(&g);
}

/* Busy disks that nothing caps wander; a stripe's members move together
 * (recorded: md RAID0 over two 500-IOPS volumes, numjobs=16). */
static void test_busy_disks_and_a_stripe_are_no_shared_ceiling(void **state)
{
	static const char *const two[] = {"vdg", "nvme0n1"};
	struct group_run g;
	uint64_t rng = 11;
	const struct shared_ceiling_group *groups;

	group_init(&g, two, 2);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		double x[6] = {20000 * (1 + 0.04 * noise(&rng)), 16, 100,
			       21000 * (1 + 0.04 * noise(&rng)), 16, 100};

		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);

	group_init(&g, two, 2);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		/* the same 1000 dealt as 500 each, moving together with the
		 * array's demand by 5% */
		double d = 1 + 0.05 * noise(&rng);
		double x[6] = {500 * d, 15, 100, 500 * d, 15, 100};

		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

/* A limit dealt out in exactly equal shares (strict round robin) is
 * flat in every part: only what each volume is known to do on its own
 * (iops_limit, or a ceiling iopsd saw) tells. */
static void test_equal_shares_need_known_per_device_ceilings(void **state)
{
	struct group_run g;
	uint64_t rng = 3;
	const struct shared_ceiling_group *groups;
	double x[9];

	for (int known = 0; known <= 1; known++) {
		group_init(&g, vdcde, 3);
		for (size_t i = 0; i < 3; i++) {
			g.known[i] = known ? 1000 : 0;
		}
		group_idle(&g, 20);
		for (unsigned t = 0; t < 60; t++) {
			double total = 1500 + noise(&rng);

			for (size_t i = 0; i < 3; i++) {
				x[3 * i] = total / 3;
				x[3 * i + 1] = 15.8;
				x[3 * i + 2] = 100;
			}
			group_feed(&g, x);
		}
		assert_int_equal(shared_ceiling_groups(g.sc, &groups), known ? 1 : 0);
		if (known) {
			assert_near(groups[0].iops_estimate, 1500, 0.01);
		}
		group_done(&g);
	}
}

/* The group next to a busy disk that is not part of it is still found
 * without it; when its members do more together it is dropped. */
static void test_unrelated_disk_is_left_out_and_a_raised_limit_drops_the_group(void **state)
{
	static const char *const four[] = {"vdc", "vdd", "vde", "vdz"};
	struct group_run g;
	uint64_t rng = 5;
	const struct shared_ceiling_group *groups;
	double x[12];

	group_init(&g, four, 4);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500) - 5; i++) {
		memcpy(x, qemu_group_1500[i], sizeof(qemu_group_1500[i]));
		x[9] = 8000 * (1 + 0.05 * noise(&rng));
		x[10] = 12;
		x[11] = 100;
		group_feed(&g, x);
	}
	assert_string_equal(only_group(&g)->devices, "vdc,vdd,vde");
	for (unsigned t = 0; t < 5; t++) {
		three_queueing(x, 900, 20, &rng);
		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_throttle_group_loaded_at_once_is_found_and_named),
	    cmocka_unit_test(test_throttle_group_loaded_in_turn_is_found),
	    cmocka_unit_test(test_independent_caps_are_no_shared_ceiling),
	    cmocka_unit_test(test_instance_burst_is_learned_and_its_base_is_the_shared_ceiling),
	    cmocka_unit_test(test_instance_burst_of_a_starved_guest_is_learned),
	    cmocka_unit_test(test_busy_disks_and_a_stripe_are_no_shared_ceiling),
	    cmocka_unit_test(test_equal_shares_need_known_per_device_ceilings),
	    cmocka_unit_test(test_unrelated_disk_is_left_out_and_a_raised_limit_drops_the_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
